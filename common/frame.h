/*
 * frame.h — length-prefixed frames on a host⇄worker channel.
 *
 * Usage:
 *   1. Worker side (blocking, trusted peer): tp_frame_send(), tp_frame_recv().
 *   2. Host side (non-blocking, hostile peer): a struct tp_frame_rx per channel;
 *      call tp_frame_rx_read() when the fd is readable, then tp_frame_rx_take()
 *      while it returns a frame. tp_frame_parse() is the pure core (fuzzed).
 */
#ifndef TP_FRAME_H
#define TP_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define TP_FRAME_HDR 4

struct tp_frame_rx {
	char *buf;
	size_t len, cap;
	size_t max; /* largest frame payload accepted */
	int eof;
};

/* Pure: looks at buf[0..len). Returns 1 and sets *payload_len when a whole
 * frame is present, 0 when more bytes are needed, -1 when the declared size is
 * above max. */
int tp_frame_parse(const char *buf, size_t len, size_t max, size_t *payload_len);

void tp_frame_rx_init(struct tp_frame_rx *rx, size_t max);
void tp_frame_rx_free(struct tp_frame_rx *rx);
/* Reads what is available. Returns bytes read, 0 at EOF, -1 on error
 * (errno set; EAGAIN means nothing to read). */
long tp_frame_rx_read(struct tp_frame_rx *rx, int fd);
/* Returns 1 and a malloc'd NUL-terminated payload in *out (caller frees),
 * 0 when no whole frame is buffered, -1 when the peer broke the framing, -2
 * when memory for the payload ran out (the reader's failure, not the peer's). */
int tp_frame_rx_take(struct tp_frame_rx *rx, char **out, size_t *out_len);

/* Blocking helpers for the worker. */
int tp_frame_send(int fd, const char *payload, size_t len);
/* The same for a payload in parts (at most TP_FRAME_PARTS, written as one:
 * a reply whose value is not copied into it, common/msg.h). */
#define TP_FRAME_PARTS 3
int tp_frame_sendv(int fd, const struct iovec *parts, int n);
/* Returns a malloc'd NUL-terminated payload, or NULL (EOF, error, too large). */
char *tp_frame_recv(int fd, size_t max, size_t *out_len);
/* Encodes a frame header for len into hdr. */
void tp_frame_header(char hdr[TP_FRAME_HDR], size_t len);

#endif
