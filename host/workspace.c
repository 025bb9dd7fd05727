/*
 * workspace.c — sessions' workspaces on disk: the base directory the host
 * makes at start, a private directory per session (read-write for that
 * session's worker alone: Landlock, sandbox/lockdown.c; its working
 * directory), and its removal when the session ends, treating whatever the
 * worker left there as hostile (nothing is followed out); the walks of a
 * workspace (a path, a file's bytes, every file) and a snapshot of it with the
 * changes since, for a session exec's result. Below sessions, the file methods
 * (files.c), workers and answers; calls nothing of the host's.
 */
#include "host_int.h"

#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "kprobe.h"

#define NOBODY 65534

static const struct tp_policy *policy_of(const struct tp_host *h, const struct session *s)
{
	return h->zyg[s->zi].policy;
}

/* ---- the base and each session's directory ---------------------------------------- */

int tp_ws_setup(struct tp_host *h, struct tp_err *err)
{
	int any = 0;
	for (size_t i = 0; i < tp_policy_set_count(h->pols.set); i++)
		any |= tp_policy_set_at(h->pols.set, i)->session.workspace_bytes > 0;
	h->ws_base_fd = -1;
	struct tp_kprobe k;
	tp_kprobe(&k);
	if (!any || k.landlock_abi <= 0)
		return 0; /* no Landlock: sessions get no workspace (and say why) */
	const char *dir = h->cfg.workspace_dir ? h->cfg.workspace_dir : "/tmp";
	char path[512];
	if ((size_t)snprintf(path, sizeof path, "%s/tidepool-ws-XXXXXX", dir) >= sizeof path - 64)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, ENAMETOOLONG,
				  "--workspace-dir: a path shorter than 440 bytes");
	if (mkdtemp(path) == NULL)
		return tp_err_sys(err, TP_LAYER_HOST, "mkdtemp(workspaces)", errno,
				  "--workspace-dir names where sessions' workspaces go");
	/* Workers (nobody, under a root host) pass through it to their own. */
	if (chmod(path, 0711) != 0 || (h->ws_base = strdup(path)) == NULL ||
	    (h->ws_base_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		int e = errno;
		rmdir(path);
		free(h->ws_base);
		h->ws_base = NULL;
		return tp_err_sys(err, TP_LAYER_HOST, "workspaces", e, NULL);
	}
	return 0;
}

/* Directories this deep are moved up to the root of the removal rather than
 * entered (the recursion and its fds stay bounded); the next pass takes them. */
#define REMOVE_DEPTH 32

/* Everything beneath dirfd, never following a link. A directory deeper than
 * REMOVE_DEPTH is renamed into rootfd and *moved set. */
/* A listing of the directory dirfd from its start, through a dup of dirfd (which
 * stays open and the caller's): closedir it. NULL when it cannot be made. */
static DIR *open_listing(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	rewinddir(d); /* a dup shares the offset a last listing left at the end */
	return d;
}

static void remove_pass(int rootfd, int dirfd, int depth, int *moved)
{
	DIR *d = open_listing(dirfd);
	struct dirent *de;
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth >= REMOVE_DEPTH) {
			static unsigned long n;
			char up[48];
			int rc;
			do {
				snprintf(up, sizeof up, ".tp-deep-%lu", ++n);
				rc = renameat2(dirfd, de->d_name, rootfd, up, RENAME_NOREPLACE);
			} while (rc != 0 && errno == EEXIST);
			if (rc == 0)
				*moved =
				    1; /* else it stays: a pass that moves nothing is the last */
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				remove_pass(rootfd, sub, depth + 1, moved);
				close(sub);
			}
			unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd, de->d_name, 0);
		}
	}
	closedir(d);
}

/* Everything beneath dirfd, however deep (code in a session can make a tree
 * of any depth): each pass lifts what lies too deep to the top. */
static void remove_beneath(int dirfd)
{
	for (int pass = 0; pass < 100000; pass++) {
		int moved = 0;
		remove_pass(dirfd, dirfd, 0, &moved);
		if (!moved)
			break;
	}
}

void tp_ws_teardown(struct tp_host *h)
{
	if (h->ws_base_fd >= 0) {
		remove_beneath(h->ws_base_fd);
		close(h->ws_base_fd);
		rmdir(h->ws_base);
	}
	h->ws_base_fd = -1;
	free(h->ws_base);
	h->ws_base = NULL;
}

int tp_ws_create(struct tp_host *h, struct session *s, char *msg, size_t len)
{
	s->ws_dir = -1;
	s->ws_path[0] = '\0';
	if (policy_of(h, s)->session.workspace_bytes == 0 || h->ws_base_fd < 0)
		return 0;
	int opath = -1;
	if (mkdirat(h->ws_base_fd, s->id, 0700) != 0 ||
	    (geteuid() == 0 &&
	     fchownat(h->ws_base_fd, s->id, NOBODY, NOBODY, AT_SYMLINK_NOFOLLOW) != 0) ||
	    (s->ws_dir = openat(h->ws_base_fd, s->id,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (opath = openat(h->ws_base_fd, s->id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
		0) {
		snprintf(msg, len, "could not make the session's workspace: %s", strerror(errno));
		if (s->ws_dir >= 0)
			close(s->ws_dir);
		s->ws_dir = -1;
		unlinkat(h->ws_base_fd, s->id, AT_REMOVEDIR);
		return -1;
	}
	snprintf(s->ws_path, sizeof s->ws_path, "%s/%s", h->ws_base, s->id);
	return opath;
}

void tp_ws_remove(struct tp_host *h, struct session *s)
{
	if (s->ws_dir < 0)
		return;
	remove_beneath(s->ws_dir);
	close(s->ws_dir);
	s->ws_dir = -1;
	unlinkat(h->ws_base_fd, s->id, AT_REMOVEDIR);
	s->ws_path[0] = '\0';
}

/* ---- walking a workspace: what files.c and a session exec's files both use ----------- */

int tp_ws_walk(int root, const char *path, int create, const char **leaf)
{
	char name[256];
	int fd = dup(root);
	const char *p = path, *slash;
	while (fd >= 0 && (slash = strchr(p, '/')) != NULL) {
		size_t n = (size_t)(slash - p);
		if (n >= sizeof name) { /* a checked path has none: a name is at most 255 bytes */
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		if (create && mkdirat(fd, name, 0700) == 0 && geteuid() == 0)
			fchownat(fd, name, NOBODY, NOBODY, AT_SYMLINK_NOFOLLOW);
		int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		errno = e;
		fd = next;
		p = slash + 1;
	}
	*leaf = p;
	return fd;
}

int tp_ws_read(int root, const char *path, uint64_t cap, int64_t at, uint64_t *size,
	       unsigned char **bytes, size_t *n)
{
	const char *leaf;
	struct stat st;
	*bytes = NULL;
	*n = 0;
	int dir = tp_ws_walk(root, path, 0, &leaf);
	/* O_NONBLOCK: a FIFO there must not hold the host in open(). */
	int fd = dir >= 0 ? openat(dir, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
	if (dir >= 0)
		close(dir);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		errno = ENOENT;
		return -1;
	}
	if (size != NULL)
		*size = (uint64_t)st.st_size;
	if (at < 0 && (uint64_t)st.st_size > cap) {
		close(fd);
		*n = (size_t)st.st_size;
		errno = EFBIG;
		return -1;
	}
	/* In parts (at >= 0): at most cap bytes from at; past the end, none. */
	uint64_t from = at < 0 ? 0 : (uint64_t)at;
	uint64_t rest = (uint64_t)st.st_size > from ? (uint64_t)st.st_size - from : 0;
	if (from > 0 && rest > 0 && lseek(fd, (off_t)from, SEEK_SET) < 0)
		rest = 0;
	size_t want = (size_t)(rest < cap ? rest : cap), off = 0;
	unsigned char *b = malloc(want + 1);
	while (b != NULL && off < want) {
		ssize_t r = read(fd, b + off, want - off);
		if (r <= 0)
			break; /* a file that shrank meanwhile: what was read */
		off += (size_t)r;
	}
	close(fd);
	if (b == NULL) {
		errno = ENOMEM;
		return -1;
	}
	b[off] = '\0';
	*bytes = b;
	*n = off;
	return 0;
}

static void scan_beneath(int dirfd, char *path, size_t plen, int depth, tp_ws_visit fn, void *ctx,
			 struct tp_ws_scan *out)
{
	DIR *d = open_listing(dirfd);
	struct dirent *de;
	if (d == NULL)
		return;
	while (!out->full && (de = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		int n = snprintf(path + plen, TP_WS_PATH_MAX - plen, "%s%s", plen ? "/" : "",
				 de->d_name);
		if (n < 0 || (size_t)n >= TP_WS_PATH_MAX - plen) {
			out->hidden = 1; /* cannot happen: 8 names of at most 255 bytes */
			path[plen] = '\0';
			continue;
		}
		if (S_ISREG(st.st_mode)) {
			if (out->files >= TP_WS_MAX_FILES) {
				out->full = 1;
				break;
			}
			out->files++;
			if (fn(ctx, path, (size_t)(plen + (size_t)n), &st) != 0)
				out->hidden = 1;
		} else if (S_ISDIR(st.st_mode) && depth + 1 >= TP_WS_MAX_DEPTH) {
			out->hidden = 1; /* what lies deeper is not listed: not complete */
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				scan_beneath(sub, path, plen + (size_t)n, depth + 1, fn, ctx, out);
				close(sub);
			}
		}
		/* Symlinks, FIFOs, sockets, devices: never followed, opened or listed. */
		path[plen] = '\0';
	}
	closedir(d);
}

void tp_ws_scan(int root, tp_ws_visit fn, void *ctx, struct tp_ws_scan *out)
{
	char path[TP_WS_PATH_MAX];
	path[0] = '\0';
	*out = (struct tp_ws_scan){ 0 };
	scan_beneath(root, path, 0, 0, fn, ctx, out);
}

json_t *tp_ws_content(const char *path, const unsigned char *bytes, size_t n, int as_text,
		      const char *text_key, const char *data_key)
{
	json_t *t = as_text ? json_stringn((const char *)bytes, n) : NULL;
	if (t != NULL)
		return json_pack("{s:s, s:I, s:o}", "path", path, "bytes", (json_int_t)n, text_key,
				 t);
	char *b64 = malloc(tp_base64_encoded_len(n) + 1);
	if (b64 == NULL)
		return NULL;
	tp_base64_encode(bytes, n, b64);
	json_t *res =
	    json_pack("{s:s, s:I, s:s}", "path", path, "bytes", (json_int_t)n, data_key, b64);
	free(b64);
	return res;
}

/* ---- what an exec changed: a snapshot before, a walk after ------------------------------ */

struct snap_ent {
	size_t off, len; /* its path in the arena */
	off_t size;
	struct timespec mtime;
	ino_t ino;
	int seen; /* met again by the walk after */
};

struct tp_ws_snap {
	struct snap_ent *v;
	size_t n, cap;
	char *arena;
	size_t used, room;
	int incomplete, failed;
};

static int snap_add(void *ctx, const char *path, size_t len, const struct stat *st)
{
	struct tp_ws_snap *s = ctx;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct snap_ent *v = realloc(s->v, cap * sizeof *v);
		if (v == NULL)
			return s->failed = 1;
		s->v = v;
		s->cap = cap;
	}
	if (s->used + len + 1 > s->room) {
		size_t room = s->room ? s->room * 2 : 1024;
		while (room < s->used + len + 1)
			room *= 2;
		char *a = realloc(s->arena, room);
		if (a == NULL)
			return s->failed = 1;
		s->arena = a;
		s->room = room;
	}
	memcpy(s->arena + s->used, path, len + 1);
	s->v[s->n++] = (struct snap_ent){ .off = s->used,
					  .len = len,
					  .size = st->st_size,
					  .mtime = st->st_mtim,
					  .ino = st->st_ino };
	s->used += len + 1;
	return 0;
}

static const struct tp_ws_snap *sort_snap; /* qsort has no context argument */

static int ent_cmp(const struct tp_ws_snap *s, const struct snap_ent *a, const char *p, size_t len)
{
	int c = memcmp(s->arena + a->off, p, a->len < len ? a->len : len);
	return c != 0 ? c : a->len < len ? -1 : a->len > len;
}

static int by_ent(const void *a, const void *b)
{
	const struct snap_ent *y = b;
	return ent_cmp(sort_snap, a, sort_snap->arena + y->off, y->len);
}

struct tp_ws_snap *tp_ws_snapshot(int root)
{
	struct tp_ws_snap *s = calloc(1, sizeof *s);
	struct tp_ws_scan sc;
	if (s == NULL)
		return NULL;
	tp_ws_scan(root, snap_add, s, &sc);
	if (s->failed) {
		tp_ws_snap_free(s);
		return NULL;
	}
	s->incomplete = sc.full || sc.hidden;
	sort_snap = s;
	if (s->n > 1)
		qsort(s->v, s->n, sizeof *s->v, by_ent);
	sort_snap = NULL;
	return s;
}

void tp_ws_snap_free(struct tp_ws_snap *s)
{
	if (s != NULL) {
		free(s->v);
		free(s->arena);
	}
	free(s);
}

static struct snap_ent *snap_find(struct tp_ws_snap *s, const char *p, size_t len)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = ent_cmp(s, &s->v[mid], p, len);
		if (c == 0)
			return &s->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct diff {
	struct tp_ws_snap *before;
	struct tp_ws_snap *after; /* the created and modified files (seen: 1 created) */
};

static int diff_visit(void *ctx, const char *path, size_t len, const struct stat *st)
{
	struct diff *d = ctx;
	struct snap_ent *was = snap_find(d->before, path, len);
	if (was != NULL) {
		was->seen = 1;
		if (was->size == st->st_size && was->ino == st->st_ino &&
		    was->mtime.tv_sec == st->st_mtim.tv_sec &&
		    was->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return 0; /* unchanged */
	}
	if (snap_add(d->after, path, len, st) != 0)
		return 1;
	d->after->v[d->after->n - 1].seen = was == NULL;
	return 0;
}

int tp_ws_changes(int root, struct tp_ws_snap *before, tp_ws_change fn, void *ctx)
{
	struct tp_ws_snap after = { 0 };
	struct diff d = { .before = before, .after = &after };
	struct tp_ws_scan sc;
	for (size_t i = 0; i < before->n; i++)
		before->v[i].seen = 0;
	tp_ws_scan(root, diff_visit, &d, &sc);
	int complete = !before->incomplete && !sc.full && !sc.hidden && !after.failed;
	sort_snap = &after;
	if (after.n > 1)
		qsort(after.v, after.n, sizeof *after.v, by_ent);
	sort_snap = NULL;
	/* Both in path order, merged; the deleted only when both walks saw every
	 * file (else one not met may only have lain beyond the walk's bounds). */
	size_t i = 0, j = 0;
	while (!after.failed) {
		while (complete && j < before->n && before->v[j].seen)
			j++;
		const struct snap_ent *a = i < after.n ? &after.v[i] : NULL;
		const struct snap_ent *b = complete && j < before->n ? &before->v[j] : NULL;
		if (a == NULL && b == NULL)
			break;
		if (b == NULL ||
		    (a != NULL && ent_cmp(before, b, after.arena + a->off, a->len) > 0)) {
			fn(ctx, after.arena + a->off, a->len, (uint64_t)a->size,
			   a->seen ? TP_WS_CREATED : TP_WS_MODIFIED);
			i++;
		} else {
			fn(ctx, before->arena + b->off, b->len, 0, TP_WS_DELETED);
			j++;
		}
	}
	int failed = after.failed;
	free(after.v);
	free(after.arena);
	return failed ? -1 : complete ? 0 : 1;
}
