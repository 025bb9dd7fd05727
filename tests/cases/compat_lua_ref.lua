-- The reference side of compat_lua.json: runs one snippet in plain lua5.4 and
-- writes what it gave as JSON to the file arg[2], by tidepool's documented
-- mapping of a Lua value (docs/lua.md "The returned value"): arrays for keys
-- exactly 1..n, other tables objects with sorted keys, NaN/inf as {"nonjson": text}.
-- Usage: lua5.4 compat_lua_ref.lua SNIPPET_FILE OUT_FILE [PRELUDE_FILE]
local function readall(p) local f = assert(io.open(p, "rb")) local s = f:read("a") f:close() return s end
local code = readall(arg[1])
local prelude = arg[3] and readall(arg[3]) or ""

local function str(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local named = { ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
                    ['\b'] = '\\b', ['\f'] = '\\f' }
    return named[c] or string.format('\\u%04x', c:byte())
  end) .. '"'
end

local function float_text(d)
  for p = 1, 17 do
    local s = string.format("%." .. p .. "g", d)
    if tonumber(s) == d then return s end
  end
  return string.format("%.17g", d)
end

local function num(x)
  if math.type(x) == "integer" then return tostring(x) end
  if x ~= x then return '{"nonjson":"nan"}' end
  if x == math.huge then return '{"nonjson":"inf"}' end
  if x == -math.huge then return '{"nonjson":"-inf"}' end
  local s = float_text(x)
  if not s:find("[.eEn]") then s = s .. ".0" end
  return s
end

local function key_text(k)
  local t = type(k)
  if t == "string" then return k end
  if t == "number" then return math.type(k) == "integer" and tostring(k) or float_text(k) end
  if t == "boolean" then return tostring(k) end
  return "<" .. t .. ">"
end

local enc
local function tbl(t)
  local n, max, seq = 0, 0, true
  for k in next, t do
    n = n + 1
    if math.type(k) ~= "integer" or k < 1 then seq = false elseif k > max then max = k end
  end
  local out = {}
  if seq and n > 0 and max == n then
    for i = 1, n do out[i] = enc(rawget(t, i)) end
    return "[" .. table.concat(out, ",") .. "]"
  end
  local keys = {}
  for k in next, t do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ia, ib = math.type(a) == "integer", math.type(b) == "integer"
    if ia ~= ib then return ia end
    if ia then return a < b end
    return key_text(a) < key_text(b)
  end)
  for i, k in ipairs(keys) do out[i] = str(key_text(k)) .. ":" .. enc(rawget(t, k)) end
  return "{" .. table.concat(out, ",") .. "}"
end

enc = function(v)
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" then return tostring(v) end
  if t == "number" then return num(v) end
  if t == "string" then return str(v) end
  if t == "table" then return tbl(v) end
  return str("<" .. t .. ">")
end

local result
local f, err = load(prelude .. code, "=snippet", "t")
if not f then
  result = '{"ok":false,"error":{"kind":"syntax_error","type":"string","message":' ..
           str((err:gsub("^snippet:%d+: ", ""))) .. '}}'
else
  local r = table.pack(xpcall(f, function(e) return e end))
  if r[1] then
    local v
    if r.n == 1 then v = "null"
    elseif r.n == 2 then v = enc(r[2])
    else
      local parts = {}
      for i = 2, r.n do parts[#parts + 1] = enc(r[i]) end
      v = "[" .. table.concat(parts, ",") .. "]"
    end
    result = '{"ok":true,"value":' .. v .. '}'
  else
    local e = r[2]
    local msg = type(e) == "string" and (e:gsub("^snippet:%d+: ", ""))
                or type(e) == "number" and tostring(e)
                or "(error object is a " .. type(e) .. " value)"
    result = '{"ok":false,"error":{"kind":"runtime_error","type":' .. str(type(e)) ..
             ',"message":' .. str(msg) .. '}}'
  end
end
local o = assert(io.open(arg[2], "wb"))
o:write(result)
o:close()
