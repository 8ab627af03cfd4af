-- Cost guards for the library functions the CPU hook cannot interrupt (see guards.py).
local BUDGET = ...
local type, tostring, error, select, getmetatable, rawlen, next = type, tostring, error,
  select, getmetatable, rawlen, next
local tointeger, floor, max, min = math.tointeger, math.floor, math.max, math.min
local byte, sub, fmt, reverse = string.byte, string.sub, string.format, string.reverse
local find, match, gmatch, gsub, rep = string.find, string.match, string.gmatch, string.gsub,
  string.rep
local pack, unpack_string, packsize = string.pack, string.unpack, string.packsize
local insert, remove, move, concat, sort = table.insert, table.remove, table.move,
  table.concat, table.sort
local unpack = table.unpack
local date = os.date

local MAXINT = math.maxinteger
local PLAIN_BYTES = 340        -- bytes memcmp compares in the time of one matcher step
local PLAIN_STEP = 1.5         -- steps per candidate position of a plain search
local SET_BYTE = 1             -- steps per byte of a set at one test (measured 0.3-0.65; `%a`: 1.05)
local SET_FREE = 8             -- bytes of a set read within one step's own time (measured)
local REP_DIRECT = 1 << 20     -- string.rep copies done by the C loop one at a time
local REP_BLOCK = 4096         -- bytes copied per C iteration beyond that
local TABLE_CHUNK = 1 << 16    -- elements per C call for tables without a metatable
local META_CHUNK = 256         -- with one (an __index chain costs up to 2000 lookups each)
local SORT_DIRECT = 1 << 14    -- elements table.sort may order without calling Lua
local STACK = 1000000          -- LUAI_MAXSTACK: table.unpack refuses more
local FORMAT_MAX = 1 << 20     -- bytes of a pack/date format

-- Errors of the C functions name them through package.loaded (the guards tail-call them, so
-- the position is the script's line): keep the raw libraries there, out of the scripts' reach.
local LOADED = package.loaded
local function copy(t)
  local c = {}
  for k, v in next, t do c[k] = v end
  return c
end
LOADED.string, LOADED.table, LOADED.os = copy(string), copy(table), copy(os)

-- Polynomials in n, the subject length: p[1] + p[2]*n + p[3]*n^2 + ...
local ZERO, ONE, N = {0}, {1}, {0, 1}

local function degree(a)
  for i = #a, 1, -1 do if a[i] ~= 0 then return i - 1 end end
  return 0
end

local function padd(a, b)
  local c = {}
  for i = 1, max(#a, #b) do c[i] = (a[i] or 0) + (b[i] or 0) end
  return c
end

local function pmax(a, b)
  local c = {}
  for i = 1, max(#a, #b) do c[i] = max(a[i] or 0, b[i] or 0) end
  return c
end

local function pscale(a, k)
  local c = {}
  for i = 1, #a do c[i] = a[i] * k end
  return c
end

local function ptimes_n(a)
  local c = {0}
  for i = 1, #a do c[i + 1] = a[i] end
  return c
end

local function ptimes_n1(a) return padd(a, ptimes_n(a)) end

-- The index just past a `[set]` that starts at i, or nil when it is not closed (as lstrlib's
-- classEnd: the first char is taken as is, `%x` escapes any char). In C calls, not a Lua
-- step per byte: a `]` closes the set when an even run of `%` comes right before it.
local function set_end(p, i, len)
  local j = i + 1
  if byte(p, j) == 94 then j = j + 1 end                     -- ^
  if j > len then return nil end
  j = j + (byte(p, j) == 37 and 2 or 1)                      -- %
  while true do
    local k = find(p, "]", j, true)
    if not k then return nil end
    if #match(reverse(sub(p, j, k - 1)), "^%%*") % 2 == 0 then return k + 1 end
    j = k + 1
  end
end

-- Steps beyond the first that one test of a set of `bytes` bytes takes.
local function set_cost(bytes) return SET_BYTE * max(0, bytes - SET_FREE) end

-- The pattern's items, each {kind, quantifier byte or nil, matches any char, weight}, and
-- whether it is anchored. The weight is what one test of the item costs in matcher steps: a
-- set is read byte by byte at each test (SET_BYTE steps a byte), `%f[set]` tests two chars. Kinds: "one" (a single char class), "group" (a capture's `(`, `)` or `()`),
-- "end" (a final `$`), "scan" (`%b` or a back-reference: up to n chars, no backtracking),
-- "fixed" (`%f`, or a malformed rest, which Lua reports when it gets there).
local function parse(p, anchor)
  local len = #p
  local i, anchored = 1, false
  if anchor and byte(p, 1) == 94 then anchored, i = true, 2 end
  local items, n = {}, 0
  while i <= len do
    local c = byte(p, i)
    local kind, nexti, weight = "one", i + 1, 1
    if c == 40 then                                          -- (
      kind = "group"
      if byte(p, i + 1) == 41 then nexti = i + 2 end
    elseif c == 41 then                                      -- )
      kind = "group"
    elseif c == 36 and i == len then                         -- $
      kind = "end"
    elseif c == 37 then                                      -- %
      local d = byte(p, i + 1)
      if d == nil then
        kind = "bad"
      elseif d == 98 then                                    -- %bxy
        if i + 3 > len then kind = "bad" else kind, nexti = "scan", i + 4 end
      elseif d == 102 then                                   -- %f[set]
        local e = byte(p, i + 2) == 91 and set_end(p, i + 2, len)
        if e then kind, nexti, weight = "fixed", e, 1 + 2 * set_cost(e - i - 4) else
          kind = "bad"
        end
      elseif d >= 48 and d <= 57 then                        -- %1
        kind, nexti = "scan", i + 2
      else
        nexti = i + 2
      end
    elseif c == 91 then                                      -- [set]
      nexti = set_end(p, i, len)
      if nexti then weight = 1 + set_cost(nexti - i - 2) else kind = "bad" end
    end
    local q = nil
    if kind == "bad" then
      kind, nexti = "fixed", len + 1
    elseif kind == "one" then
      local d = byte(p, nexti)
      if d == 42 or d == 43 or d == 45 or d == 63 then q, nexti = d, nexti + 1 end
    end
    n = n + 1
    items[n] = {kind, q, c == 46 and nexti - i <= 2, weight}
    i = nexti
  end
  return items, anchored
end

-- Worst-case steps of one match attempt of the items, from the last item to the first:
-- F when it fails (nil: it cannot fail), S when it succeeds, L whether a success costs
-- steps in proportion to the text it consumes, E whether it succeeds at the subject's end.
local function attempt(items)
  local F, S, L, E = nil, ONE, true, true
  for k = #items, 1, -1 do
    local kind, q, any, w = items[k][1], items[k][2], items[k][3], items[k][4]
    local W = {w}                                            -- one test of the item
    if kind == "group" then
      S = padd(S, ONE)
      if F then F = padd(F, ONE) end
    elseif kind == "end" then
      F, S, L, E = ONE, ONE, true, true
    elseif kind == "scan" then
      F, S, E = padd(N, F or ONE), padd(N, S), false
    elseif kind == "fixed" or q == nil then
      F, S, E = padd(W, F or ZERO), padd(W, S), false
    elseif q == 63 then                                      -- ?: the rest, twice
      if F then
        L = L and degree(F) == 0
        S = padd(padd(W, F), S)
        F = padd(W, pscale(F, 2))
      else
        S = padd(W, S)
      end
    elseif q == 45 then                                      -- -: the rest at each length
      if F then
        L = L and degree(F) == 0
        local tries = padd(W, F)
        S = padd(ptimes_n(tries), S)
        if any and E then F = nil else F = ptimes_n1(tries) end
      end
    else                                                     -- * and +: scan, then back off
      local scanned = padd(pscale(N, w), S)
      if F and not (any and E) then
        S = padd(ptimes_n(F), scanned)
        F = padd(pscale(N, w), ptimes_n1(F))
        L = false
      else
        S, F = scanned, nil
      end
      if q == 43 then F, E = F or W, false end
    end
  end
  return F, S, L
end

local FACTORIAL = {1}
for i = 2, 40 do FACTORIAL[i] = FACTORIAL[i - 1] * (i - 1) end

-- The polynomial bounding one call. Nested quantifiers walk ordered positions, so the
-- n^k term is divided by k!. `op` is "find" (find and match), "gmatch" (one iteration;
-- `^` is a plain char there) or "gsub" (the whole subject).
local function polynomial(p, op)
  local items, anchored = parse(p, op ~= "gmatch")
  local F, S, L = attempt(items)
  local total
  if anchored then
    total = F and pmax(F, S) or S
  elseif op == "gsub" then
    local weight = #items + 2                                -- a char's share of a win
    for k = 1, #items do weight = weight + items[k][4] end
    local wins = L and ptimes_n1({weight}) or ptimes_n1(S)
    total = padd(F and ptimes_n1(F) or ZERO, wins)
  else
    total = F and padd(ptimes_n1(F), S) or S
  end
  for i = 1, #total do total[i] = total[i] / FACTORIAL[min(i, #FACTORIAL)] end
  return total
end

-- Per kind of call: pattern -> polynomial ("plain": pattern -> has no special chars).
local CACHE_KEY = 200
local CACHE_MAX = 256
local caches, cached

local function clear()
  caches, cached = {find = {}, gmatch = {}, gsub = {}, plain = {}}, 0
end
clear()

local function remember(kind, p, value)
  if #p <= CACHE_KEY then
    if cached >= CACHE_MAX then clear() end
    caches[kind][p], cached = value, cached + 1
  end
  return value
end

local function steps(p, op, n)
  local poly = caches[op][p] or remember(op, p, polynomial(p, op))
  local v = 0
  for i = #poly, 1, -1 do v = v * n + poly[i] end
  return v
end

local function plain_pattern(p)
  local known = caches.plain[p]
  if known ~= nil then return known end
  return remember("plain", p, #p <= FORMAT_MAX and not find(p, "[%^%$%*%+%?%.%(%[%%%-]"))
end

local function shown(p)
  if #p > 40 then p = sub(p, 1, 40) .. "..." end
  return (gsub(p, "[%c\128-\255]", "?"))
end

local function check(name, p, op, n)
  local v = steps(p, op, n)
  if not (v <= BUDGET) then                                  -- NaN: inf * 0
    error(fmt("pattern too costly for a subject of %d bytes: string.%s with '%s' could take "
      .. "%.0e steps (the limit is %.0e); split the text (e.g. by lines) or simplify the "
      .. "pattern", n, name, shown(p), v, BUDGET), 3)
  end
end

-- A string argument as Lua's C functions see it (numbers convert), or nil.
local function text(v)
  local tv = type(v)
  if tv == "string" then return v end
  if tv == "number" then return tostring(v) end
  return nil
end

-- 1-based start of a search, as lstrlib's posrelatI does; nil when init is invalid.
local function start(init, len)
  if init == nil then return 1 end
  local i = tointeger(init)
  if not i then return nil end
  if i > 0 then return i end
  if i == 0 or i < -len then return 1 end
  return len + i + 1
end

local function plain_cost(n, lp) return n * PLAIN_STEP * (1 + lp / PLAIN_BYTES) end

-- string.find(s, p, init, true) in windows whose worst case fits the budget.
local function plain_find(s, p, init)
  local ls, lp = #s, #p
  local n = ls - init + 1
  if lp == 0 or lp > n or plain_cost(n, lp) <= BUDGET then
    return find(s, p, init, true)
  end
  local window = max(1, floor(BUDGET / plain_cost(1, lp)))
  local at = init
  while at + lp - 1 <= ls do
    local found = find(sub(s, at, at + window + lp - 2), p, 1, true)
    if found then return at + found - 1, at + found + lp - 2 end
    at = at + window
  end
  return nil
end

local guards = {}

function guards.find(s, p, init, plain)
  local ts, tp = text(s), text(p)
  local at = ts and tp and start(init, #ts)
  if at and at <= #ts + 1 then
    if plain or plain_pattern(tp) then
      return plain_find(ts, tp, at)
    end
    check("find", tp, "find", #ts - at + 1)
  end
  return find(s, p, init, plain)
end

function guards.match(s, p, init)
  local ts, tp = text(s), text(p)
  local at = ts and tp and start(init, #ts)
  if at and at <= #ts + 1 then check("match", tp, "find", #ts - at + 1) end
  return match(s, p, init)
end

function guards.gmatch(s, p, init)
  local ts, tp = text(s), text(p)
  local at = ts and tp and start(init, #ts)
  if at then check("gmatch", tp, "gmatch", max(0, #ts - at + 1)) end
  return gmatch(s, p, init)
end

function guards.gsub(s, p, repl, n)
  local ts, tp = text(s), text(p)
  if ts and tp then check("gsub", tp, "gsub", #ts) end
  local tr = type(repl)
  if tr == "function" then
    -- C functions run without the hook: call through Lua, so it fires between matches.
    local f = repl
    repl = function(...) return f(...) end
  elseif tr == "table" and getmetatable(repl) ~= nil then
    local t = repl
    repl = function(k) return t[k] end
  end
  return gsub(s, p, repl, n)
end

function guards.rep(s, n, sep)
  local ts, count = text(s), tointeger(n)
  local tsep = sep == nil and "" or text(sep)
  if ts and tsep and count and count > REP_DIRECT then
    local unit = #ts + #tsep
    if unit == 0 then return "" end      -- the C loop would spin count times for nothing
    if unit < REP_BLOCK then
      -- Copy blocks of `per` copies; a `per` that divides count avoids a final concatenation
      -- (which would briefly need twice the result's memory).
      local lo = (REP_BLOCK + unit - 1) // unit
      local per = lo
      for d = lo, 16 * lo do
        if count % d == 0 then per = d break end
      end
      local big = rep(rep(ts, per, tsep), count // per, tsep)
      local rest = count % per
      if rest == 0 then return big end
      return big .. tsep .. rep(ts, rest, tsep)
    end
  end
  return rep(s, n, sep)
end

local function check_format(name, f)
  local tf = text(f)
  if tf and #tf > FORMAT_MAX then
    error(fmt("%s: a format of %d bytes is too long (the limit is %d); use a shorter one",
      name, #tf, FORMAT_MAX), 3)
  end
end

function guards.pack(f, ...)
  check_format("string.pack", f)
  return pack(f, ...)
end

function guards.unpack(f, ...)
  check_format("string.unpack", f)
  return unpack_string(f, ...)
end

function guards.packsize(f)
  check_format("string.packsize", f)
  return packsize(f)
end

function guards.date(f, ...)
  check_format("os.date", f)
  return date(f, ...)
end

-- Tables: a table without a metatable holds every element the C loops visit (memory bounds
-- them), except table.move, whose range is free. Otherwise work in chunks, with Lua between.
local function plain(t) return type(t) == "table" and getmetatable(t) == nil end

local function length(t)
  local n = tointeger(#t)
  if not n then error("object length is not an integer", 3) end
  return n
end

local function position(v, arg, name)
  local i = tointeger(v)
  if not i then
    error(fmt("bad argument #%d to '%s' (number has no integer representation)", arg, name), 3)
  end
  return i
end

function guards.insert(t, ...)
  if type(t) ~= "table" or plain(t) then return insert(t, ...) end
  local nargs = select("#", ...)
  local e = length(t) + 1
  if nargs == 1 then
    t[e] = ...
    return
  elseif nargs ~= 2 then
    error("wrong number of arguments to 'insert'", 2)
  end
  local pos, v = ...
  pos = position(pos, 2, "insert")
  if pos < 1 or pos > e then error("bad argument #2 to 'insert' (position out of bounds)", 2) end
  for i = e, pos + 1, -1 do t[i] = t[i - 1] end
  t[pos] = v
end

function guards.remove(t, pos)
  if type(t) ~= "table" or plain(t) then return remove(t, pos) end
  local size = length(t)
  if pos == nil then pos = size else pos = position(pos, 2, "remove") end
  if pos ~= size and (pos < 1 or pos > size + 1) then
    error("bad argument #2 to 'remove' (position out of bounds)", 2)
  end
  local value = t[pos]
  while pos < size do
    t[pos] = t[pos + 1]
    pos = pos + 1
  end
  t[pos] = nil
  return value
end

function guards.move(a1, f, e, t, a2)
  local fi, ei, ti = tointeger(f), tointeger(e), tointeger(t)
  local dest = a2
  if dest == nil then dest = a1 end
  if not (fi and ei and ti and type(a1) == "table" and type(dest) == "table") or ei < fi
      or not (fi > 0 or ei < MAXINT + fi) or ti > MAXINT - (ei - fi) then
    return move(a1, f, e, t, a2)
  end
  local chunk = (plain(a1) and plain(dest)) and TABLE_CHUNK or META_CHUNK
  local count = ei - fi + 1
  if count <= chunk then return move(a1, f, e, t, a2) end
  if ti > ei or ti <= fi or dest ~= a1 then
    for i = 0, count - 1, chunk do
      move(a1, fi + i, fi + min(i + chunk, count) - 1, ti + i, dest)
    end
  else                                   -- overlapping, moving up: last chunk first
    local i = (count - 1) // chunk * chunk
    while i >= 0 do
      move(a1, fi + i, fi + min(i + chunk, count) - 1, ti + i, dest)
      i = i - chunk
    end
  end
  return dest
end

function guards.concat(t, sep, i, j)
  if type(t) ~= "table" or plain(t) then return concat(t, sep, i, j) end
  local first = i == nil and 1 or tointeger(i)
  local last = j == nil and length(t) or tointeger(j)
  if not (first and last) or last - first < META_CHUNK then return concat(t, sep, i, j) end
  local tsep = sep == nil and "" or text(sep)
  if not tsep then return concat(t, sep, i, j) end
  local parts, n = {}, 0
  for k = first, last, META_CHUNK do
    n = n + 1
    parts[n] = concat(t, tsep, k, min(k + META_CHUNK - 1, last))
  end
  return concat(parts, tsep)
end

function guards.unpack_table(t, i, j)
  if type(t) ~= "table" or plain(t) then return unpack(t, i, j) end
  local first = i == nil and 1 or tointeger(i)
  local last = j == nil and length(t) or tointeger(j)
  if not (first and last) or last < first or last - first >= STACK then
    return unpack(t, i, j)
  end
  local copy = {}
  for k = first, last do copy[k - first + 1] = t[k] end
  return unpack(copy, 1, last - first + 1)
end

local function less(a, b) return a < b end

function guards.sort(t, comp)
  if comp == nil then
    if type(t) == "table" and (not plain(t) or rawlen(t) > SORT_DIRECT) then comp = less end
  elseif type(comp) == "function" then
    local f = comp                         -- it may be a C function: call it through Lua
    comp = function(a, b) return f(a, b) end
  end
  sort(t, comp)
end

return guards
