#!/usr/bin/env python3
"""Writes the checked-in seed corpora of tests/fuzz/corpus/<harness>/ (run from
the repository root; existing seeds, including regression cases, are kept).
Each seed is named for what it exercises."""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "corpus")
sys.path.insert(0, os.path.join(HERE, "..", "cases"))
import protocol_cases  # noqa: E402


def put(harness, name, data):
    d = os.path.join(ROOT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- proto: byte 0 = line cap / read size selector, then stdin -------------
def rpc(method, params=None, id=1):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m).encode()


P = {
    "exec_lua": rpc("sandbox/exec", {"lang": "lua", "code": "return 1+1"}),
    "exec_full": rpc("sandbox/exec", {"lang": "python", "code": "print('hi')\n1+1", "inputs": {"x": [1, {"y": None}]},
                                      "seed": 42, "policy": "standard", "stream": False,
                                      "limits": {"memory_bytes": 1000000, "instructions": 1000, "cpu_ms": 100,
                                                 "wall_ms": 200, "output_bytes": 10, "result_bytes": 10,
                                                 "result_depth": 3}}),
    "initialize": rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
    "initialize_unknown_version": rpc("initialize", {"protocolVersion": "1999-01-01"}),
    "initialized_notification": b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    "ping_string_id": rpc("ping", id="abc"),
    "tools_list": rpc("tools/list"),
    "tools_call": rpc("tools/call", {"name": "run_lua", "arguments": {"code": "return {1,2}", "inputs": {"a": 1}}}),
    "tools_call_python": rpc("tools/call", {"name": "run_python", "arguments": {"code": "1"}}),
    "cancel": b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
    "nul_in_code": b'{"jsonrpc":"2.0","id":1,"method":"sandbox/exec","params":{"lang":"lua","code":"a\\u0000b"}}',
    "nul_in_input_keys": b'{"jsonrpc":"2.0","id":1,"method":"sandbox/exec","params":{"lang":"lua","code":"",'
                         b'"inputs":{"x\\u0000":{"\\u0000":{"\\u0001\\u0001":"\\u0000"}}}}}',
    "fault_nul_key_duplicate": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\\u0000":1,"\\u0000":2}}',
}
for name, line in P.items():
    put("proto", name, b"\x00" + line + b"\n")
# protocol faults: one seed per case of tests/cases/protocol/, its input as sent
for case in protocol_cases.load():
    if case.fill is None:
        put("proto", "fault_" + case.name, b"\x00" + case.input())
    else:  # a small line cap (byte 0) makes a short fill overlong
        put("proto", "fault_" + case.name, b"\x41" + case.input(fill=300))
# framing: several lines, CRLF, blank lines, no final newline, small read chunks
put("proto", "pipelined_crlf", b"\x05" + P["exec_lua"] + b"\r\n\r\n  \t\n" + P["tools_list"] + b"\n" + P["ping_string_id"])
put("proto", "overlong_line_small_cap", b"\x41" + b'{"jsonrpc":"2.0","id":1,"method":"' + b"x" * 300 + b'"}\n' + P["tools_list"] + b"\n")
put("proto", "overlong_then_split", b"\x4f" + b"y" * 200 + b"\n" + P["exec_lua"][:20] + b"\n" + P["exec_lua"] + b"\n")
put("proto", "deep_inputs", b"\x00" + b'{"jsonrpc":"2.0","id":1,"method":"sandbox/exec","params":{"lang":"lua","code":"","inputs":{"a":' + b"[" * 100 + b"]" * 100 + b"}}}\n")

# ---- worker_reply: 16-byte header, 96 page bytes, 128 output bytes, channel --
def frame(payload):
    return struct.pack("<I", len(payload)) + payload


def page(out_len=(5, 0), tripped=0, tripped_limit=0, limit=0, used=0, syscall=-1, instr=7, peak=1000):
    p = struct.pack("<IIQ", 0x7470736d, 64, 1 << 20)
    p += struct.pack("<II", *out_len) + struct.pack("<II", 0, 0) + struct.pack("<Q", 5)
    p += struct.pack("<IIQQ", tripped, tripped_limit, limit, used)
    p += struct.pack("<iIQQ", syscall, 0, instr, peak)
    return p.ljust(96, b"\x00")


def header(depth=64, rbytes=0x80, cpu=100, flags=3, status=0, host_kind=0, fill=0, obytes=0x80):
    return (bytes([depth, rbytes, cpu, flags]) + struct.pack("<i", status) + bytes([host_kind, fill, obytes])
            + b"\x00" * 5)


OUT = (b"hello" + b"\x00" * 59 + b"err\xff\xfe" + b"\x00" * 59)
# Worker replies in the wire format of common/msg.h (docs/worker-protocol.md).
KINDS = {"syntax_error": 1, "runtime_error": 2, "memory_limit": 3, "instruction_limit": 4, "cpu_limit": 5,
         "timeout": 6, "output_limit": 7, "policy_violation": 8, "sandbox_violation": 9, "crashed": 10,
         "cancelled": 11, "internal_error": 12, "input_error": 13, "result_error": 14}
ABSENT = 0xffffffff
SAME_AS_VALUE = 0xfffffffe  # a reply's text: the value's own JSON text (version 8)


def msg_header(kind, version=8):
    return struct.pack("<IBBBB", 0x676d7074, version, kind, 0, 0)


def text(b):
    return struct.pack("<I", ABSENT) if b is None else struct.pack("<I", len(b)) + b


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01"


def ok_reply(value, repr=0, usage=(10, 100, 500), raw=None, seq=1, txt=None, cut=0, images=(),
             nimages=None, nonfinite=None, same=False):
    v = raw if raw is not None else json.dumps(value, separators=(",", ":")).encode()
    t = struct.pack("<I", SAME_AS_VALUE) if same else text(txt)
    return (msg_header(2) + struct.pack("<QBBQQQ", seq, 1, repr, *usage) + text(v) + t
            + struct.pack("<BI", cut, len(images) if nimages is None else nimages)
            + b"".join(text(i) for i in images)
            + text(None if nonfinite is None else json.dumps(nonfinite).encode()))


def err_reply(kind, type, message, traceback=None, line=0, column=0, limit=None, usage=(1, 1, 0), seq=1, data=None):
    lid, lv, lu = limit if limit else (ABSENT, 0, 0)
    return (msg_header(2) + struct.pack("<QBBQQQ", seq, 0, 0, *usage) + struct.pack("<BIQQII", KINDS[kind], lid, lv, lu, line, column)
            + text(type) + text(message) + text(traceback) + text(data))


def request(code, inputs=None, limits=(64 << 20, 0, 5000, 10000, 1 << 20, 1 << 20, 64, 100), seed=None, seq=1):
    return (msg_header(1) + struct.pack("<Q", seq) + struct.pack(f"<{len(limits)}Q", *limits)
            + struct.pack("<BQB", seed is not None, seed or 0, 0) + text(None) + text(code) + text(None if inputs is None else json.dumps(inputs).encode()))


OK = ok_reply({"a": [1, 2.5, "x"]})
ERR = err_reply("runtime_error", b"string", b"boom", b"tb", 3)
LIM = err_reply("memory_limit", None, b"m", limit=(0, 1, 2))
W = {
    "ok_reply": (header(), page(), frame(OK)),
    "ok_repr": (header(), page(), frame(ok_reply("{1, 2}", repr=1))),
    "ok_text_is_value": (header(), page(), frame(ok_reply({"a": [0.1, "x"]}, same=True))),
    "ok_text_is_value_scalar": (header(), page(), frame(ok_reply(1.5, same=True))),
    "ok_nonfinite": (header(), page(), frame(ok_reply([1, None], nonfinite={"/1": "nan"}))),
    "input_error": (header(), page(), frame(err_reply("input_error", None, b"input nested deeper than 64"))),
    "result_error": (header(), page(), frame(err_reply("result_error", None, b"cycle in returned value"))),
    "request_frame": (header(), page(), request(b"return x", {"x": [1, {"y": None}]}, seed=42)),
    "request_no_inputs": (header(), page(), request(b"1+1")),
    "error_reply": (header(), page(), frame(ERR)),
    "limit_reply": (header(), page(), frame(LIM)),
    "sticky_trip_overrides_reply": (header(), page(tripped=4, tripped_limit=1, limit=1000, used=1000), frame(OK)),
    "sticky_trip_self_kill": (header(status=158 << 8), page(tripped=5, tripped_limit=2, limit=100, used=300), b""),
    "seccomp_report": (header(status=159 << 8), page(syscall=99), b""),
    "seccomp_blocked_sigsys": (header(status=31), page(), b""),
    "killed_sigsegv": (header(status=11), page(), b""),
    "killed_sigkill_cpu": (header(status=9, cpu=1), page(), b""),
    "sigxcpu": (header(status=24), page(), b""),
    "exit_status_before_reply": (header(status=3 << 8), page(), b""),
    "host_timeout": (header(host_kind=6, flags=7), page(), frame(OK)),
    "host_internal_no_page": (header(host_kind=12, flags=5), page(), b""),
    "worker_lost": (header(flags=2), page(), b""),
    # hostile replies
    "hostile_claims_sandbox_violation": (header(), page(), frame(err_reply("sandbox_violation", None, b"x"))),
    "hostile_unknown_kind": (header(), page(), frame(ERR.replace(struct.pack("<B", 2) + struct.pack("<I", ABSENT), b"\x63" + struct.pack("<I", ABSENT), 1))),
    "hostile_too_deep": (header(depth=3), page(), frame(ok_reply([[[[1]]]]))),
    "hostile_too_big": (header(rbytes=2), page(), frame(OK)),
    "hostile_dup_keys": (header(), page(), frame(ok_reply(None, raw=b'{"a":1,"a":2}'))),
    "hostile_not_json": (header(), page(), frame(b"\xff\xfe not json")),
    "hostile_value_not_json": (header(), page(), frame(ok_reply(None, raw=b"\xff\xfe not json"))),
    "hostile_nul_in_text": (header(), page(), frame(err_reply("runtime_error", b"string", b"bo\x00om"))),
    "hostile_huge_declared_len": (header(), page(), b"\xff\xff\xff\x7f" + OK),
    "hostile_truncated_frame": (header(), page(), frame(OK)[:-10]),
    "hostile_two_frames": (header(), page(), frame(OK) + frame(ERR)),
    "hostile_forged_lengths": (header(), page(out_len=(0xffffffff, 0x80000000), tripped=99, tripped_limit=77, syscall=1 << 20), frame(OK)),
    "hostile_bad_trip_limit": (header(), page(tripped=3, tripped_limit=0xffffffff), b""),
    "hostile_note_unterminated": (header(fill=0x41, status=159 << 8), page(), b""),
    "hostile_trailing_bytes": (header(), page(), frame(OK + b"\x00")),
    "hostile_text_too_long": (header(), page(), frame(err_reply("runtime_error", b"t" * 300, b"boom"))),
    "hostile_text_len_past_end": (header(), page(), frame(ERR[:-2] + struct.pack("<I", 1 << 20))),
    "hostile_wrong_version": (header(), page(), frame(msg_header(2, version=9) + OK[8:])),
    "hostile_bad_limit_id": (header(), page(), frame(err_reply("memory_limit", None, b"m", limit=(77, 1, 2)))),
    "error_column": (header(), page(), frame(err_reply("syntax_error", b"SyntaxError", b"invalid syntax",
                                                      b'  File "<snippet>", line 1\n    1 +* 2\n       ^\nSyntaxError: invalid syntax', 1, 4))),
    "hostile_column_out_of_range": (header(), page(), frame(err_reply("runtime_error", b"string", b"boom", None, 1, 100000001))),
    "hostile_no_message": (header(), page(), frame(err_reply("runtime_error", b"string", None))),
    # an error({...}) table's data (version 4), and data past the caps
    "error_data": (header(), page(), frame(err_reply("runtime_error", b"table", b"bad input", b"tb", 2,
                                                      data=b'{"code":42,"message":"bad input","list":[1,null]}'))),
    "hostile_data_too_deep": (header(depth=3), page(), frame(err_reply("runtime_error", b"table", b"x", data=b'[[[[1]]]]'))),
    "hostile_data_too_big": (header(rbytes=2), page(), frame(err_reply("runtime_error", b"table", b"x", data=b'"' + b"y" * 300 + b'"'))),
    "hostile_data_not_json": (header(), page(), frame(err_reply("runtime_error", b"table", b"x", data=b'{"a":'))),
    "hostile_data_dup_keys": (header(), page(), frame(err_reply("runtime_error", b"table", b"x", data=b'{"a":1,"a":2}'))),
    "hostile_old_version": (header(), page(), frame(msg_header(2, version=3) + ERR[8:-4])),
    # version 6: an ok reply's text and images, and their refusals
    "ok_text": (header(), page(), frame(ok_reply([1, 2], txt=b"[1, 2]"))),
    "ok_text_cut": (header(), page(), frame(ok_reply([1, 2], txt=b"[1, ", cut=1))),
    "ok_images": (header(), page(), frame(ok_reply(None, images=(PNG, PNG + b"more")))),
    "hostile_text_beside_repr": (header(), page(), frame(ok_reply("{1}", repr=1, txt=b"{1}"))),
    "hostile_cut_without_text": (header(), page(), frame(ok_reply(1, cut=1))),
    "hostile_text_too_long": (header(rbytes=2), page(), frame(ok_reply(1, txt=b"x" * 40))),
    "hostile_image_not_png": (header(), page(), frame(ok_reply(1, images=(b"GIF89a" + b"\0" * 20,)))),
    "hostile_too_many_images": (header(), page(), frame(ok_reply(1, images=(PNG,), nimages=17))),
    "hostile_images_over_output": (header(obytes=8), page(), frame(ok_reply(1, images=(PNG, PNG)))),
    "hostile_image_absent": (header(), page(), frame(ok_reply(1, images=(None,)))),
}
for name, (h, pg, ch) in W.items():
    put("worker_reply", name, h + pg + OUT + ch)

# ---- ljson: byte 0 mode ('L' chunk, 'J' JSON, else program), depth, bytes cap --
L = {
    "lua_nested": b"return {1, 2, {a = 'x', b = {true, false}}, 'str'}",
    "lua_multi": b"return 1, 'two', {3}, nil, 2^53, 0/0, 1/0, -0.0",
    "lua_cycle": b"local t = {} t.self = t return t",
    "lua_shared": b"local s = {1} return {s, s, {s}}",
    "lua_sparse": b"return {[1]=1, [3]=3}, {[0]=0}, {[-1]=1}, {[1.5]=1}, {[2^63]=1}",
    "lua_mixed_keys": b"return {1, 2, x = 3, [true] = 4, [print or 1] = 5}",
    "lua_metatables": b"local mt = {__index = function() error('ran') end, __pairs = function() error('ran') end,"
                      b" __len = function() error('ran') end}"
                      b" return setmetatable({1, 2, 3}, mt), setmetatable({}, {__index = {a = 1}})",
    "lua_invalid_utf8": b"return {['\\xff\\xfe'] = '\\xc0\\x80', s = '\\xed\\xa0\\x80', ok = '\\u{10FFFF}'}",
    "lua_escapes": b"return '\\\"\\\\\\b\\f\\n\\r\\t\\1\\31\\127', {['\\0'] = '\\0'}",
    "lua_types": b"return print or type, coroutine.create(function() end), io",
    "lua_deep": b"local t = 1 for i = 1, 300 do t = {t} end return t",
    "lua_big_string": b"return string.rep('ab', 5000)",
    "lua_numbers": b"return {1e308, -1e308, 5e-324, 0.1, 1e16, 123456789012345678, math.mininteger, 3.0}",
    "lua_gc": b"local t = setmetatable({}, {__gc = function() error('gc') end}) t = nil return {1}",
    "lua_error": b"error('boom')",
    "lua_loop": b"while true do end",
    "lua_memory": b"local t = {} for i = 1, 1e7 do t[i] = i end return t",
    "lua_key_collisions": b"return {[1] = 1, ['1'] = 2}, {[true] = 0, ['true'] = 0}, {[1.5] = 0, ['1.5'] = 0},"
                          b" {[{}] = 0, [{}] = 0}, {['\\xff'] = 0, ['\\xfe'] = 0}",
    "lua_nul_keys": b"return {['a\\0b'] = {['\\0'] = {['\\1'] = '\\0', ['\\1\\1'] = 1}}}",
    "lua_key_order": b"local t = {} for i = 1, 40 do t['k' .. i] = i t[i * 3] = i end t[0.5] = 1 t[true] = 2 return t",
}
for name, code in L.items():
    put("ljson", name, b"L\x40\x80" + code)
    if name in ("lua_nested", "lua_big_string", "lua_escapes"):
        put("ljson", name + "_small_caps", b"L\x02\x05" + code)
J = {
    "json_object": b'{"a":[1,2,{"b":null}],"c":"\\u00e9","d":1.5e300,"e":true}',
    "json_nulls": b'[null, 1, null]',
    "json_deep": b"[" * 90 + b"]" * 90,
    "json_nul_key": b'{"a\\u0000b": "\\u0000"}',
    "json_nul_keys_deep": b'{"x":{"\\u0000":{"\\u0001\\u0001":[{"\\u0000\\u0001":1,"\\u0001":2}]}}}',
    "json_scalar": b'"x"',
    "json_numbers": b'[9223372036854775807, -9223372036854775808, 1e-320, 0.0]',
}
for name, text in J.items():
    put("ljson", name, b"J\x40\x80" + text)
# programs: see step() in fuzz_ljson.c (op % 16)
put("ljson", "prog_table_kv", b"P\x40\x80" + bytes([5, 14, 4, 3]) + b"abc" + bytes([7, 5, 2]) + struct.pack("<q", 7) + bytes([8, 7]))
put("ljson", "prog_cycle", b"P\x40\x80" + bytes([5, 0x1e, 6, 0, 7]))
put("ljson", "prog_metatable", b"P\x40\x80" + bytes([5, 1, 8, 0x11, 8, 11, 10, 11, 0x1a, 0x2a]))
put("ljson", "prog_nested", b"P\x05\x80" + bytes([2]) + struct.pack("<q", 1) + bytes([12, 70]))
put("ljson", "prog_floats", b"P\x40\x80" + bytes([3]) + struct.pack("<d", float("nan")) + bytes([3]) + struct.pack("<d", float("inf")) + bytes([3]) + struct.pack("<d", -0.0))
put("ljson", "prog_holes", b"P\x40\x80" + bytes([5, 1, 9, 3, 1, 9, 0, 1, 9, 0xff]))


# ---- policy: a policy file's bytes -----------------------------------------------
POLICIES = os.path.join(HERE, "..", "..", "policies")
for name in sorted(os.listdir(POLICIES)):
    if name.endswith(".json"):
        with open(os.path.join(POLICIES, name), "rb") as f:
            put("policy", "preset_" + name[:-5], f.read())
put("policy", "unknown_key", b'{"name": "x", "colour": 1}')
put("policy", "nested_unknown", b'{"name": "x", "limits": {"cpu": 1}}')
put("policy", "out_of_range", b'{"name": "x", "limits": {"cpu_ms": 99999999}}')
put("policy", "paths", b'{"name": "x", "filesystem": {"read": ["/tmp", "rel", "/a/../b"], "write": ["/tmp"], "file_bytes": 10}}')
put("policy", "redact", b'{"name": "x", "redact": {"strings": ["abcd"], "patterns": ["sk-[a-z]+", "("], "env": ["HOME"]}}')
put("policy", "lists", b'{"name": "x", "lua": {"libraries": ["base"], "functions": ["os.time"]}, "python": {"modules": ["math"], "builtins": ["len"]}, "tools": ["t"]}')
put("policy", "escapes", b'{"name": "x", "description": "\\u0000\\ud800", "\\u006eame": "y"}')
put("policy", "many_errors", b'{"python": {"modules": ["os", "math", "os"]}, "name": 7, "limits": {"cpu_ms": 0, "cpu": 1}, "colour": 1, "languages": ["cobol"], "filesystem": {"write": ["/tmp"]}}')
# glibc's regcomp copies what a repetition repeats: this took 24 GB before its cost was bounded.
put("policy", "regex_cost", b'{"name": "x", "redact": {"patterns": ["bytearray", "s' + b'+' * 64 + b'k", "(a{1,100}){1,100}"]}}')
# A repetition of what can match empty: seconds (the first) to minutes (the rest) in regcomp.
put("policy", "regex_empty", b'{"name": "x", "redact": {"patterns": ["byt+r++e$a+++*+*+++0,|||||||0}", "' + b'(|$)+' * 20 + b'", "(()|){1,3}+{1,3}(()|){1,3}+{1,3}"]}}')



# ---- jsonreal: any bytes (a JSON text as jansson writes it, or not) ----------------
put("jsonreal", "usage", b'{"usage":{"cpu_ms":20.353999999999999,"wall_ms":1.3009999999999999,'
                         b'"n":12345678901234567890}}')
put("jsonreal", "reals", b'[0.10000000000000001,0.30000000000000004,1.0000000000000001e300,'
                         b'4.9406564584124654e-324,-0.0,3.0,10000000000000000.0,1e17,-1.5e-7,'
                         b'9.9999999999999995e-8]')
put("jsonreal", "strings", b'["a\\"0.10000000000000001\\\\",0.10000000000000001,{"0.5":"\\u00001.5"}]')
put("jsonreal", "junk", b'1.2.3e--5 -.5 5. 1e5 1e999 "')
