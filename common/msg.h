/*
 * msg.h — the messages between the host and a worker: one C type each, one
 * encoder and one decoder each, used by both ends (and by the fuzz harness).
 *
 * Usage:
 *   1. Host: fill a struct tp_request (borrowed pointers), tp_msg_request_encode()
 *      and send the bytes as one frame (frame.h).
 *   2. Worker: tp_msg_request_decode() the frame into an owned struct tp_request
 *      (tp_request_free() after), run it, fill a struct tp_reply (tp_text_set(),
 *      value steals a json_t), tp_msg_reply_encode() and send it as one frame.
 *   3. Host: tp_msg_reply_decode() treats the frame as hostile: every length is
 *      bounded, every enum range-checked, the value parsed with the exec's caps.
 *      On success the struct is owned: tp_reply_free() after; on failure the
 *      struct tp_err (err.h) is the exec's verdict.
 * Wire format (docs/worker-protocol.md): a header {u32 magic, u8 version, u8
 * type, u16 0}, then the fields in order, integers little-endian, texts as u32
 * length + bytes (length 0xffffffff: absent), JSON values as text.
 * A worker that ends without replying says why in its exit status (TP_EXIT_*).
 */
#ifndef TP_MSG_H
#define TP_MSG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "limit.h"

#define TP_EXIT_FATAL 157     /* setup failed before any code ran */
#define TP_EXIT_LIMIT 158     /* a limit tripped and the grace period ran out */
#define TP_EXIT_VIOLATION 159 /* seccomp trapped a syscall (128 + SIGSYS) */

#define TP_MSG_VERSION 8
/* Caps the host holds a reply to; the worker cuts its texts below them. */
#define TP_MSG_MAX_TYPE 256u
#define TP_MSG_MAX_TEXT (64u << 10)
/* An ok reply's images (version 6): at most this many, each a PNG, all of them
 * together within output_bytes. */
#define TP_MSG_MAX_IMAGES 16
#define TP_STR_(x) #x
#define TP_STR(x) TP_STR_(x) /* a macro's value as a string literal */
/* Largest request a worker reads (the host caps lines far lower). */
#define TP_MSG_MAX_REQUEST (64u << 20)

enum tp_msg_type {
	TP_MSG_REQUEST = 1,
	TP_MSG_REPLY = 2,
	TP_MSG_TOOL_CALL = 3,   /* worker → host, while an exec runs */
	TP_MSG_TOOL_RESULT = 4, /* host → worker, the answer to it */
	TP_MSG_READY = 5,       /* worker → host: isolation "state", its fresh state is built */
};

/* A text that may hold any byte; s == NULL means absent. Owned where the
 * struct holding it says so. UTF-8 is repaired when the host shows it. */
struct tp_text {
	char *s;
	size_t n;
};

/* Host → worker: one exec. */
struct tp_request {
	uint64_t seq; /* the host's number for this request: the reply carries it back */
	const char *code;
	size_t code_len;
	json_t *inputs; /* an object, or NULL */
	struct tp_limits limits;
	int has_seed;
	uint64_t seed;
	int session; /* keep the globals of earlier execs, and count memory from the first */
	const char *workspace; /* a session's workspace directory (absolute), or NULL */
	int rehearsal;         /* the worker's own trial run (worker.c): never set from the wire */
};

/* Why an exec failed, as the language layer saw it. */
struct tp_failure {
	enum tp_kind kind;        /* one a language may claim (tp_msg_claimable) */
	struct tp_text type;      /* the exception class or Lua error type; absent for limits */
	struct tp_text message;   /* always present */
	struct tp_text traceback; /* the snippet's own frames, or absent */
	int line;                 /* snippet line, 0 = unknown */
	int column;               /* 1-based column in that line (version 5), 0 = unknown */
	json_t *data; /* owned, or NULL: the error's value as JSON (a Lua error({...}) table),
		       * within the exec's result_bytes and result_depth */
	int limit_id; /* enum tp_limit_id for a limit kind, else -1 */
	uint64_t limit, used;
};

struct tp_usage {
	uint64_t instructions;
	uint64_t memory_peak_bytes;
	uint64_t cpu_us;
};

/* Worker → host: how the exec ended. Output is not here: it is in the shared
 * page, so it survives a kill. */
struct tp_reply {
	uint64_t seq; /* the request's seq: a reply answers one request */
	int ok;
	int value_repr;      /* the value is the repr() of a non-JSON object */
	json_t *value;       /* when ok: owned; NULL while value_lazy */
	struct tp_text text; /* when ok (version 6): the value as a REPL shows it, at most
			      * result_bytes, owned; absent for no value and for a repr value
			      * (the value is its text) */
	int text_cut;        /* text was cut to fit result_bytes */
	/* (version 8) The text is the value's own compact JSON text (a Lua table, a
	 * Python list or dict of over 4096 bytes of JSON):
	 * the worker sets this and leaves text absent, and sends no bytes for it;
	 * the decoder makes text from the value's bytes (reals tidied, as
	 * tp_json_dumps writes them) and leaves this set. Only for an array or
	 * object value, never with value_repr or text_cut. */
	int text_is_value;
	/* The value's compact JSON text, owned, or NULL. Worker side: when set,
	 * encoded as the value in place of dumping value (which may then be NULL;
	 * Python writes its value so, tp_pyjson_write). Host side: set by the
	 * decoder, the value's text as the worker sent it with its reals tidied,
	 * when the value is an array or object sent compact (no whitespace
	 * outside strings): the host writes these bytes into its reply instead of
	 * dumping the value again (tp_json_dumps_splice). */
	char *value_json;
	size_t value_json_n;
	/* Host side (tp_msg_reply_decode_lazy): the value, a compact array or
	 * object, was checked as hostile input but no tree was made: value is
	 * NULL and value_json its text; tp_reply_value makes the tree when one is
	 * needed. A text that is the value's (text_is_value) is then value_json
	 * too, and text.s stays NULL. */
	int value_lazy;
	struct tp_text images[TP_MSG_MAX_IMAGES]; /* when ok: PNG files, owned; together
						   * within output_bytes */
	unsigned nimages;
	json_t *nonfinite; /* when ok (version 7), owned or NULL: {JSON pointer: "nan" | "inf" |
			    * "-inf"}, each pointer resolving to a null of value: the
			    * numbers JSON has none for (docs/protocol.md) */
	struct tp_failure error; /* when !ok */
	struct tp_usage usage;
};

#define TP_TOOL_NAME_MAX 64
#define TP_TOOL_MESSAGE_MAX 8192u

/* Worker → host: the code called a client tool (tools.call). */
struct tp_tool_call {
	char name[TP_TOOL_NAME_MAX + 1]; /* 1..64 of A-Z a-z 0-9 _ - . */
	json_t *arguments;               /* an object: owned */
};

enum tp_tool_status {
	TP_TOOL_OK = 0,      /* value is the client's result */
	TP_TOOL_ERROR = 1,   /* the client answered an error: message says it */
	TP_TOOL_REFUSED = 2, /* the host refused the call (policy, limit, stop): message */
};

/* Host → worker: how the call ended. */
struct tp_tool_result {
	enum tp_tool_status status;
	json_t *value;          /* TP_TOOL_OK: owned (any JSON value) */
	struct tp_text message; /* otherwise */
};

/* The READY message: the header alone, its seq the exec it follows. */
char *tp_msg_ready_encode(uint64_t seq, size_t *len);
/* 0 when buf is exactly a READY message following exec seq, else -1. */
int tp_msg_ready_decode(const char *buf, size_t len, uint64_t seq);

/* The type byte of a message (enum tp_msg_type), or -1 when buf is no message. */
int tp_msg_type(const char *buf, size_t len);
/* Both ends. Encoders: malloc'd, NULL out of memory. The call decoder is the
 * host's (hostile: name checked, arguments an object within result_bytes and
 * result_depth of lim); the result decoder the worker's (caps from lim too).
 * 0, or -1 with *out cleared. */
char *tp_msg_tool_call_encode(const struct tp_tool_call *c, size_t *len);
int tp_msg_tool_call_decode(const char *buf, size_t len, const struct tp_limits *lim,
			    struct tp_tool_call *out);
char *tp_msg_tool_result_encode(const struct tp_tool_result *r, size_t *len);
int tp_msg_tool_result_decode(const char *buf, size_t len, const struct tp_limits *lim,
			      struct tp_tool_result *out);
void tp_tool_call_free(struct tp_tool_call *c);
void tp_tool_result_free(struct tp_tool_result *r);
/* Is s a tool name a policy may list (1..64 of A-Z a-z 0-9 _ - .)? */
int tp_tool_name_ok(const char *s, size_t n);

/* The kinds a worker may claim; the host refuses a reply with any other. */
int tp_msg_claimable(enum tp_kind kind);

/* Copies n bytes; more than max are cut and a note of how many is appended.
 * Returns 0, or -1 out of memory (t left absent). */
int tp_text_set(struct tp_text *t, const char *s, size_t n, size_t max);
void tp_text_free(struct tp_text *t);

/* Both return a malloc'd buffer and its length, or NULL out of memory. */
char *tp_msg_request_encode(const struct tp_request *req, size_t *len);
char *tp_msg_reply_encode(const struct tp_reply *r, size_t *len);
/* The same reply in three parts, so a worker can send a large value without
 * copying it into the message (one writev: tp_frame_sendv): pre, then the
 * value's own text (value_json, borrowed) as mid, then post; mid and post are
 * empty when the reply has no value_json. pre and post are malloc'd (free
 * both). Their concatenation is tp_msg_reply_encode's bytes. 0, or -1 out of
 * memory (nothing to free). */
struct tp_msg_split {
	char *pre, *post;
	const char *mid;
	size_t pre_n, mid_n, post_n;
};
int tp_msg_reply_encode_split(const struct tp_reply *r, struct tp_msg_split *out);

/* Both return 0 and fill *out (owned), or -1 leaving *out cleared; the reply
 * decoder records why in err: TP_KIND_INTERNAL at TP_LAYER_HOST, "worker reply
 * refused: ...". The request decoder copies the code. */
int tp_msg_request_decode(const char *buf, size_t len, struct tp_request *out);
int tp_msg_reply_decode(const char *buf, size_t len, const struct tp_limits *lim,
			struct tp_reply *out, struct tp_err *err);
/* The same, but a compact array or object value is only checked (tp_json_check)
 * and kept as its text (value_lazy), for a host that copies it into its reply
 * as bytes; where the check cannot tell, the tree is made as above. */
int tp_msg_reply_decode_lazy(const char *buf, size_t len, const struct tp_limits *lim,
			     struct tp_reply *out, struct tp_err *err);
/* The value's tree, made from value_json if it was kept as text; NULL when out
 * of memory (or for a reply with no value). */
json_t *tp_reply_value(struct tp_reply *r);
/* Largest reply frame the host reads from a worker with these limits. */
size_t tp_msg_reply_max(const struct tp_limits *lim);

void tp_request_free(struct tp_request *req); /* only a decoded one */
void tp_reply_free(struct tp_reply *r);

#endif
