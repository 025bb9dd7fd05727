/*
 * workspace.c — sessions' workspaces on disk: the base directory the host
 * makes at start, a private directory per session (read-write for that
 * session's worker alone: Landlock, sandbox/lockdown.c; its working
 * directory), and its removal when the session ends, treating whatever the
 * worker left there as hostile (nothing is followed out). Below sessions and
 * the file methods (files.c); calls nothing of the host's.
 */
#include "host_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
static void remove_pass(int rootfd, int dirfd, int depth, int *moved)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d); /* a dup shares the offset a last listing left at the end */
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
