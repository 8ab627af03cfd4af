-- The sandbox's Lua side: hardening, the per-eval environment, the driver (see prelude.py).
local HOOK_COUNT, GUARDS = ...
local type, next, rawget, rawset, rawequal, rawlen, select, error, tostring, tonumber =
    type, next, rawget, rawset, rawequal, rawlen, select, error, tostring, tonumber
local raw_pcall, raw_xpcall, raw_setmetatable, raw_getmetatable, raw_load =
    pcall, xpcall, setmetatable, getmetatable, load
local co_create, co_resume, co_yield, co_status, co_running, co_isyieldable, co_close =
    coroutine.create, coroutine.resume, coroutine.yield, coroutine.status, coroutine.running,
    coroutine.isyieldable, coroutine.close
local sethook = debug.sethook
local clock, huge, mtype, floor = os.clock, math.huge, math.type, math.floor
local concat, sort = table.concat, table.sort
local fmt, gsub, find, sub, char = string.format, string.gsub, string.find, string.sub, string.char
local utf8len = utf8.len

-- Every string in this state shares one metatable whose __index is the real string library.
-- The C functions that can loop long are replaced by their guards (see guards.py) there and
-- in the shared tables every eval's copies come from; the locals above stay the raw ones.
string.dump = nil
raw_getmetatable("").__metatable = false
string.find, string.match, string.gmatch, string.gsub, string.rep =
    GUARDS.find, GUARDS.match, GUARDS.gmatch, GUARDS.gsub, GUARDS.rep
string.pack, string.unpack, string.packsize = GUARDS.pack, GUARDS.unpack, GUARDS.packsize
table.insert, table.remove, table.move, table.concat, table.unpack, table.sort =
    GUARDS.insert, GUARDS.remove, GUARDS.move, GUARDS.concat, GUARDS.unpack_table, GUARDS.sort

local G = _G
local STRING, TABLE, MATH, UTF8 = string, table, math, utf8
local OS = {time = os.time, clock = os.clock, date = GUARDS.date}
-- Nothing a script could reach through the real globals stays there.
for _, name in next, {"python", "debug", "io", "package", "require", "dofile", "loadfile",
                      "load", "collectgarbage", "os", "warn", "coroutine"} do
  G[name] = nil
end

local MEMERR = "not enough memory"
local HOST = {}                                                -- marks a host-call yield
local INTERNAL = raw_setmetatable({}, {__mode = "k"})          -- our own error tables
local HOST_ERRORS = raw_setmetatable({}, {__mode = "k"})       -- failed host call -> id
local ARRAYS = raw_setmetatable({}, {__mode = "k"})            -- tables made from JSON arrays
local null = raw_setmetatable({}, {
  __metatable = false,
  __newindex = function() error("codeward.null cannot be changed", 2) end,
  __tostring = function() return "null" end,
})
local SHARED = raw_setmetatable({[null] = true}, {__mode = "k"})

-- Per-eval state (one eval at a time per runtime).
local tripped = nil          -- "cpu" or "memory" once a limit is hit; never cleared
local deadline = huge        -- os.clock() value at which the running resume must stop
local current = nil          -- the eval's main coroutine
local started = false
local stash = nil            -- a value handed over by Python for the next call
local source, args = nil, nil
local result_limit, log_limit = 1048576, 65536

local TRIPPED_MESSAGE = {cpu = "CPU time limit exceeded", memory = MEMERR}

local function hook()
  if tripped then error(TRIPPED_MESSAGE[tripped], 0) end
  if clock() > deadline then
    tripped = "cpu"
    error(TRIPPED_MESSAGE.cpu, 0)
  end
end

local function hooked(co)
  sethook(co, hook, "", HOOK_COUNT)
  return co
end

-- Re-raise limit errors that a script's pcall/xpcall/resume caught.
local function passthrough(ok, ...)
  if not ok then
    local e = ...
    if rawequal(e, MEMERR) then tripped = tripped or "memory" end
    if tripped then error(TRIPPED_MESSAGE[tripped], 0) end
  end
  return ok, ...
end

local function fail(kind, message)
  local e = {kind = kind, message = message}
  INTERNAL[e] = true
  error(e, 0)
end

-- JSON encoding: a table with keys 1..n is an array, other tables are objects.
local ESCAPES = {['"'] = '\\"', ["\\"] = "\\\\", ["\127"] = "\\u007f"}
for i = 0, 31 do ESCAPES[char(i)] = fmt("\\u%04x", i) end

-- The JSON text of string `s`; nil when it is not valid UTF-8.
local function quoted(s)
  if not utf8len(s) then return nil end
  if find(s, '[%c"\\]') then s = gsub(s, '[%c"\\]', ESCAPES) end
  return '"' .. s .. '"'
end

local function encode_string(s, buf)
  local text = quoted(s)
  if not text then fail("lua_error", "a string is not valid UTF-8, so it cannot become JSON") end
  buf:put(text)
end

local function encode_number(v, buf)
  if mtype(v) == "integer" then return buf:put(fmt("%d", v)) end
  if v ~= v or v == huge or v == -huge then
    fail("lua_error", "NaN and infinite numbers cannot become JSON")
  end
  local s = fmt("%.14g", v)
  if tonumber(s) ~= v then s = fmt("%.17g", v) end
  if not find(s, "[%.eEn]") then s = s .. ".0" end
  buf:put(s)
end

local encode_value
local SORT_DIRECT = 16384
local function less(a, b) return a < b end

local function encode_table(t, buf, depth, path)
  if path[t] then
    fail("lua_error", "a table contains itself (a cycle), so it cannot become JSON")
  end
  if depth > 200 then fail("lua_error", "tables are nested more than 200 deep") end
  path[t] = true
  local count, maxn, sequence = 0, 0, true
  for k in next, t do
    count = count + 1
    if mtype(k) == "integer" and k >= 1 then
      if k > maxn then maxn = k end
    else
      sequence = false
    end
  end
  if count == 0 then
    buf:put(ARRAYS[t] and "[]" or "{}")
  elseif sequence and maxn == count then
    buf:put("[")
    for i = 1, count do
      if i > 1 then buf:put(",") end
      encode_value(rawget(t, i), buf, depth + 1, path)
    end
    buf:put("]")
  else
    local keys, names, n = {}, {}, 0
    for k in next, t do
      local name
      if type(k) == "string" then name = k
      elseif mtype(k) == "integer" then name = fmt("%d", k)
      else
        fail("lua_error", "table keys must be strings or integers to become JSON, not " .. type(k))
      end
      n = n + 1
      names[n] = name
      keys[name] = k
    end
    if n > SORT_DIRECT then sort(names, less) else sort(names) end  -- the hook fires in less
    buf:put("{")
    for i = 1, n do
      if i > 1 then buf:put(",") end
      encode_string(names[i], buf)
      buf:put(":")
      encode_value(rawget(t, keys[names[i]]), buf, depth + 1, path)
    end
    buf:put("}")
  end
  path[t] = nil
end

function encode_value(v, buf, depth, path)
  local tv = type(v)
  if v == nil or rawequal(v, null) then buf:put("null")
  elseif tv == "boolean" then buf:put(v and "true" or "false")
  elseif tv == "number" then encode_number(v, buf)
  elseif tv == "string" then encode_string(v, buf)
  elseif tv == "table" then encode_table(v, buf, depth, path)
  else fail("lua_error", "a " .. tv .. " value cannot become JSON")
  end
end

local Buffer = {}
Buffer.__index = Buffer
function Buffer:put(s)
  local n = self.n + 1
  self.n, self.size = n, self.size + #s
  self[n] = s
  if self.size > self.limit then
    fail("output_too_large", "the value is larger than " .. self.limit .. " bytes as JSON")
  end
end

-- A flat table, as `encode_table` writes it, without its buffer and protected call: at
-- most FLAT_MAX strings, booleans and integers, keyed 1..n or by strings (a host call's
-- arguments, most results). nil for anything else, which the general encoder takes.
local FLAT_MAX = 64

local function flat_scalar(v)
  local tv = type(v)
  if tv == "string" then
    return quoted(v)
  elseif tv == "boolean" then
    return v and "true" or "false"
  elseif mtype(v) == "integer" then
    return fmt("%d", v)
  end
  return nil
end

local function encode_flat(t)
  local n, named = 0, true
  for k in next, t do
    n = n + 1
    if n > FLAT_MAX then return nil end
    if type(k) ~= "string" then named = false end
  end
  if n == 0 then return ARRAYS[t] and "[]" or "{}" end
  local parts = {}
  if not named then  -- keys 1..n, else the general encoder's to word
    for i = 1, n do
      local text = flat_scalar(rawget(t, i))
      if not text then return nil end
      parts[i] = text
    end
    return "[" .. concat(parts, ",") .. "]"
  end
  local names = {}
  for k in next, t do names[#names + 1] = k end
  sort(names)
  for i = 1, n do
    local name, value = flat_scalar(names[i]), flat_scalar(rawget(t, names[i]))
    if not name or not value then return nil end
    parts[i] = name .. ":" .. value
  end
  return "{" .. concat(parts, ",") .. "}"
end

-- The JSON text of `v`, or nil, kind, message. Limit errors propagate.
local function encode(v, limit)
  if type(v) == "string" and #v < limit then  -- the common short case
    local text = quoted(v)
    if text and #text <= limit then return text end
  elseif mtype(v) == "integer" and limit >= 20 then
    return fmt("%d", v)
  elseif type(v) == "table" and not rawequal(v, null) then
    local text = encode_flat(v)
    if text and #text <= limit then return text end
  end
  local buf = raw_setmetatable({n = 0, size = 0, limit = limit}, Buffer)
  local ok, e = passthrough(raw_pcall(encode_value, v, buf, 0, {}))
  if ok then return concat(buf, "", 1, buf.n) end
  if type(e) == "table" and INTERNAL[e] then return nil, e.kind, e.message end
  error(e, 0)
end

-- Host calls: yield to the actor, which resumes with (ok, value).
local function host_call(name, ...)
  local ok, value = co_yield(HOST, name, ...)
  if ok then return value end
  error(value, 0)
end

local function json_argument(fname, what, v)
  local text, _, message = encode(v, result_limit)
  if not text then error(fname .. ": " .. what .. ": " .. message, 3) end
  return text
end

local function cw_git(subcommand, git_args, opts)
  return host_call("git",
    json_argument("codeward.git", "subcommand", subcommand),
    json_argument("codeward.git", "args", git_args),
    json_argument("codeward.git", "opts", opts))
end

local function cw_call(tool, arguments)
  return host_call("call",
    json_argument("codeward.call", "tool", tool),
    json_argument("codeward.call", "arguments", arguments))
end

local function cw_log(...)
  local n = select("#", ...)
  local parts = {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  local message = concat(parts, "\t")
  if #message > log_limit then message = sub(message, 1, log_limit) end
  host_call("log", message)
end

-- What scripts get instead of the raw functions.
-- Inside a coroutine, Lua recovers from an error in a pcall without unwinding the C stack,
-- so pcall nesting is not bounded by the C-call limit there. Unwinding a deep nest after a
-- limit was hit costs quadratic time in C (no hook runs), so the nesting is capped.
local MAX_PROTECTED_DEPTH = 100
local protected_depth = raw_setmetatable({}, {__mode = "k"})   -- coroutine -> live pcalls

local function enter_protected()
  local co = co_running()
  local depth = (protected_depth[co] or 0) + 1
  if depth > MAX_PROTECTED_DEPTH then
    error("pcall and xpcall are nested more than " .. MAX_PROTECTED_DEPTH .. " deep", 3)
  end
  protected_depth[co] = depth
  return co
end

local function leave_protected(co, ...)
  protected_depth[co] = protected_depth[co] - 1
  return passthrough(...)
end

local function safe_pcall(f, ...)
  local co = enter_protected()
  return leave_protected(co, raw_pcall(f, ...))
end

local function safe_xpcall(f, handler, ...)
  local co = enter_protected()
  return leave_protected(co, raw_xpcall(f, function(e)
    if tripped or rawequal(e, MEMERR) then return e end
    return handler(e)
  end, ...))
end

local function safe_setmetatable(t, mt)
  if SHARED[t] then error("cannot change the metatable of a shared table", 2) end
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("__gc metamethods are not allowed in the sandbox", 2)
  end
  return raw_setmetatable(t, mt)
end

local function safe_rawset(t, k, v)
  if SHARED[t] then error("cannot change a shared table", 2) end
  return rawset(t, k, v)
end

local function new_coroutine(f)
  return hooked(co_create(f))
end

-- A coroutine that made a host call yielded HOST: pass the call up to our own resumer
-- and hand the answer back down, so host calls work from inside user coroutines.
local function resume_through(co, ok, ...)
  if ok and rawequal((...), HOST) and co_status(co) == "suspended" then
    return resume_through(co, co_resume(co, co_yield(...)))
  end
  return ok, ...
end

local function user_resume(co, ...)
  return passthrough(resume_through(co, co_resume(co, ...)))
end

local function wrapped_results(ok, ...)
  if ok then return ... end
  local e = ...
  if rawequal(e, MEMERR) then tripped = tripped or "memory" end
  if tripped then error(TRIPPED_MESSAGE[tripped], 0) end
  error(e, 0)
end

local function user_wrap(f)
  local co = new_coroutine(f)
  return function(...)
    return wrapped_results(resume_through(co, co_resume(co, ...)))
  end
end

local function user_close(co)
  return passthrough(co_close(co))
end

local function copy(t)
  local c = {}
  for k, v in next, t do c[k] = v end
  return c
end

local function make_env()
  local env = {
    assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
    pcall = safe_pcall, xpcall = safe_xpcall, rawequal = rawequal, rawget = rawget,
    rawlen = rawlen, rawset = safe_rawset, select = select, setmetatable = safe_setmetatable,
    getmetatable = raw_getmetatable, tonumber = tonumber, tostring = tostring, type = type,
    _VERSION = _VERSION, print = cw_log,
    string = copy(STRING), table = copy(TABLE), math = copy(MATH), utf8 = copy(UTF8),
    os = copy(OS),
    coroutine = {
      create = new_coroutine, resume = user_resume, wrap = user_wrap, yield = co_yield,
      status = co_status, running = co_running, isyieldable = co_isyieldable, close = user_close,
    },
    codeward = {git = cw_git, call = cw_call, log = cw_log, null = null},
  }
  env._G = env
  return env
end

local function message_of(e)
  local te = type(e)
  if te == "string" then return e end
  if te == "number" then return fmt("%.14g", e) end
  if te == "table" then
    local m = rawget(e, "message")
    if type(m) == "string" then return m end
  end
  return "(error object is a " .. te .. " value)"
end

local driver = {}

-- Called with the memory limit lifted: only stores what Python hands over. `arrays` (or
-- nil) lists the tables that came from JSON arrays.
local function mark_arrays(list)
  if list then
    for i = 1, rawlen(list) do ARRAYS[list[i]] = true end
  end
end
function driver.stash(value, arrays)
  stash = value
  mark_arrays(arrays)
end
-- A constant chunk is compiled here too (see driver.compile): nil, or a message.
function driver.prepare(src, a, limit, loglimit, arrays, constant)
  source, args, result_limit, log_limit = src, a, limit, loglimit
  mark_arrays(arrays)
  if constant then return driver.compile(true) end
end
function driver.host_error(id)
  HOST_ERRORS[stash] = id
end
function driver.reset()
  current, started, stash, source, args, deadline = nil, false, nil, nil, nil, huge
end
function driver.memory_tripped() tripped = tripped or "memory" end

-- `codeward.git` for the daemon's own git_command chunk: its arguments are the JSON texts
-- the daemon encoded from the tool's validated arguments, handed on as they are (the host
-- decodes and checks them as it does a script's). No script can reach it.
local function cw_git_json(subcommand, git_args, opts)
  if type(subcommand) ~= "string" or type(git_args) ~= "string" or type(opts) ~= "string" then
    error("codeward.git_json: pass three JSON texts", 2)
  end
  return host_call("git", subcommand, git_args, opts)
end

-- The daemon's own constant chunks (never a script's): each compiled once per runtime, all
-- run in one environment holding only the codeward functions, made once.
local CONSTANT_ENV = {codeward = {git = cw_git, git_json = cw_git_json, call = cw_call,
                                  log = cw_log, null = null}}
local CONSTANTS_MAX = 16
local constants, constants_n = {}, 0

local function load_constant(src)
  local chunk = constants[src]
  if chunk then return chunk end
  local err
  chunk, err = raw_load(src, "=eval", "t", CONSTANT_ENV)
  if not chunk then return nil, err end
  if constants_n >= CONSTANTS_MAX then constants, constants_n = {}, 0 end
  constants[src], constants_n = chunk, constants_n + 1
  return chunk
end

-- Compile the prepared source (a script into a fresh environment, under the memory limit;
-- one of the daemon's constant chunks from `prepare`); nil on success, or a message.
function driver.compile(constant)
  local chunk, err
  if constant then
    chunk, err = load_constant(source)
  else
    local env = make_env()
    env.args = args
    chunk, err = raw_load(source, "=eval", "t", env)
  end
  source = nil
  if not chunk then return message_of(err) end
  current = new_coroutine(function(...)
    local text, kind, message = encode((chunk(...)), result_limit)
    if text then return text end
    fail(kind, message)
  end)
  started = false
  return nil
end

local function report(co, ok, ...)
  if not ok then
    local e = ...
    if rawequal(e, MEMERR) then tripped = tripped or "memory" end
    if tripped then return "limit", tripped end
    if type(e) == "table" then
      local id = HOST_ERRORS[e]
      if id then return "host_error", id end
      if INTERNAL[e] then return "fail", e.kind, e.message end
    end
    return "error", message_of(e)
  end
  if co_status(co) == "dead" then return "done", (...) end
  if rawequal((...), HOST) then return "host", select(2, ...) end
  return "yield"
end

-- Resume the eval for at most `budget` CPU seconds, with `value` (a number or a boolean),
-- else the stashed value. Its first result is the CPU time the resume took (what the
-- budget is counted down by).
local function timed(since, ...) return clock() - since, ... end

function driver.resume(budget, ok, value)
  local co = current
  if value == nil then value = stash end
  stash = nil
  if tripped then return 0, "limit", tripped end
  local now = clock()
  deadline = now + budget
  if started then return timed(now, report(co, co_resume(co, ok, value))) end
  started = true
  local a = args
  args = nil
  return timed(now, report(co, co_resume(co, a)))
end

function driver.null() return null end

return driver
