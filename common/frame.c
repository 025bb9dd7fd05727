/*
 * frame.c — 4-byte little-endian length + payload framing.
 * The host side never trusts a declared length: it is checked against the cap
 * before a byte of the payload is buffered.
 */
#include "frame.h"

#include <errno.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tp_frame_header(char hdr[TP_FRAME_HDR], size_t len)
{
	uint32_t n = (uint32_t)len;
	for (int i = 0; i < TP_FRAME_HDR; i++)
		hdr[i] = (char)((n >> (8 * i)) & 0xff);
}

static uint32_t read_header(const char *buf)
{
	const unsigned char *p = (const unsigned char *)buf;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int tp_frame_parse(const char *buf, size_t len, size_t max, size_t *payload_len)
{
	if (len < TP_FRAME_HDR)
		return 0;
	uint32_t n = read_header(buf);
	if (n > max)
		return -1;
	if (len - TP_FRAME_HDR < n)
		return 0;
	*payload_len = n;
	return 1;
}

void tp_frame_rx_init(struct tp_frame_rx *rx, size_t max)
{
	memset(rx, 0, sizeof *rx);
	rx->max = max;
}

void tp_frame_rx_free(struct tp_frame_rx *rx)
{
	free(rx->buf);
	rx->buf = NULL;
	rx->len = rx->cap = 0;
}

static int reserve(struct tp_frame_rx *rx, size_t want)
{
	if (want <= rx->cap)
		return 0;
	size_t cap = rx->cap ? rx->cap : 4096;
	while (cap < want)
		cap *= 2;
	char *p = realloc(rx->buf, cap);
	if (p == NULL)
		return -1;
	rx->buf = p;
	rx->cap = cap;
	return 0;
}

long tp_frame_rx_read(struct tp_frame_rx *rx, int fd)
{
	/* Never buffer more than one maximal frame plus a header. */
	size_t limit = rx->max + 2 * TP_FRAME_HDR;
	if (rx->len >= limit) {
		errno = EMSGSIZE;
		return -1;
	}
	size_t want = rx->len + 65536 < limit ? rx->len + 65536 : limit;
	if (reserve(rx, want) != 0) {
		errno = ENOMEM;
		return -1;
	}
	ssize_t n = read(fd, rx->buf + rx->len, want - rx->len);
	if (n < 0)
		return -1;
	if (n == 0)
		rx->eof = 1;
	rx->len += (size_t)n;
	return (long)n;
}

int tp_frame_rx_take(struct tp_frame_rx *rx, char **out, size_t *out_len)
{
	size_t n;
	int r = tp_frame_parse(rx->buf, rx->len, rx->max, &n);
	if (r <= 0)
		return r;
	char *p = malloc(n + 1);
	if (p == NULL)
		return -2; /* ours: out of memory, not the sender's framing */
	memcpy(p, rx->buf + TP_FRAME_HDR, n);
	p[n] = '\0';
	rx->len -= TP_FRAME_HDR + n;
	memmove(rx->buf, rx->buf + TP_FRAME_HDR + n, rx->len);
	*out = p;
	*out_len = n;
	return 1;
}

static int read_all(int fd, char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int tp_frame_sendv(int fd, const struct iovec *parts, int n)
{
	struct iovec iov[1 + TP_FRAME_PARTS];
	char hdr[TP_FRAME_HDR];
	size_t len = 0;
	int k = 1;

	if (n < 0 || n > TP_FRAME_PARTS)
		return -1;
	for (int i = 0; i < n; i++) {
		len += parts[i].iov_len;
		if (parts[i].iov_len > 0)
			iov[k++] = parts[i];
	}
	if (len > UINT32_MAX)
		return -1;
	tp_frame_header(hdr, len);
	iov[0] = (struct iovec){ hdr, sizeof hdr };
	/* One writev for the whole frame: the reader wakes once, not for the
	 * header and again for the rest; a short write goes on from where it
	 * stopped. */
	struct iovec *v = iov;
	while (k > 0) {
		ssize_t w = writev(fd, v, k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		while (k > 0 && (size_t)w >= v->iov_len) {
			w -= (ssize_t)v->iov_len;
			v++, k--;
		}
		if (k > 0) {
			v->iov_base = (char *)v->iov_base + w;
			v->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int tp_frame_send(int fd, const char *payload, size_t len)
{
	struct iovec part = { (void *)payload, len };
	return tp_frame_sendv(fd, &part, 1);
}

char *tp_frame_recv(int fd, size_t max, size_t *out_len)
{
	char hdr[TP_FRAME_HDR];
	if (read_all(fd, hdr, sizeof hdr) != 0)
		return NULL;
	uint32_t n = read_header(hdr);
	if (n > max)
		return NULL;
	char *p = malloc((size_t)n + 1);
	if (p == NULL)
		return NULL;
	if (read_all(fd, p, n) != 0) {
		free(p);
		return NULL;
	}
	p[n] = '\0';
	*out_len = n;
	return p;
}
