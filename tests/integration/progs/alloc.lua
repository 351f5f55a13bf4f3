-- SPDX-License-Identifier: MIT
-- alloc.lua: an allocation-heavy Lua workload for t_progs.sh (tables, strings, closures,
-- coroutines, the garbage collector). Prints only results that do not depend on addresses:
-- Lua 5.4 seeds its string hash from heap addresses, so pairs() order can change with the
-- allocator; every walk over a hash part here sorts its keys or sums order-independently.

local N = tonumber(arg and arg[1]) or 200000

-- a 32-bit FNV-1a over strings, to fold big results into one printed number
local function fnv(h, s)
  for i = 1, #s do
    h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff
  end
  return h
end

-- 1. strings: build, concatenate, format, split, gsub
local words = {}
for i = 1, N do
  words[i] = string.format("w%05d_%s", i % 50000, string.rep(string.char(97 + i % 26), 1 + i % 13))
end
local joined = table.concat(words, " ", 1, 20000)
local vowels = select(2, joined:gsub("[aeiou]", "%0%0"))
local up = joined:upper():sub(1, 64)
print("strings", #words, #joined, vowels, up)

-- 2. tables: a hash of counts, then sorted keys
local count = {}
for i = 1, N do
  local k = words[i]:sub(1, 4)
  count[k] = (count[k] or 0) + 1
end
local keys = {}
for k in pairs(count) do keys[#keys + 1] = k end
table.sort(keys)
local h = 2166136261
for _, k in ipairs(keys) do h = fnv(h, k .. "=" .. count[k]) end
print("tables", #keys, h)

-- 3. closures and upvalues: counters created and dropped
local function make_counter(start)
  local n = start
  return function(step) n = n + step; return n end
end
local acc = 0
for i = 1, N // 4 do
  local c = make_counter(i)
  c(1); acc = acc + c(i % 7)
end
print("closures", acc)

-- 4. nested tables, a binary tree built and walked (GC churn)
local function tree(depth)
  if depth == 0 then return { v = 1 } end
  return { l = tree(depth - 1), r = tree(depth - 1), v = depth }
end
local function walk(t)
  if not t.l then return t.v end
  return t.v + walk(t.l) + walk(t.r)
end
local total = 0
for i = 1, 12 do
  total = total + walk(tree(14))
  if i % 4 == 0 then collectgarbage("collect") end
end
print("trees", total)

-- 5. coroutines passing strings
local gen = coroutine.wrap(function()
  for i = 1, N // 4 do coroutine.yield(tostring(i) .. ":" .. (i * i) % 1000) end
end)
local hc = 2166136261
for _ = 1, N // 4 do hc = fnv(hc, gen()) end
print("coroutines", hc)

-- 6. table.insert/remove queues and a sort of records
local recs = {}
for i = 1, N // 2 do
  recs[#recs + 1] = { id = i, key = (i * 2654435761) % 1000003, name = words[i] }
end
table.sort(recs, function(a, b)
  if a.key ~= b.key then return a.key < b.key end
  return a.id < b.id
end)
local q = {}
for i = 1, #recs do
  table.insert(q, recs[i].name)
  if #q > 1000 then table.remove(q, 1) end
end
print("sort", recs[1].id, recs[#recs].id, recs[#recs // 2].key, #q, q[#q])

-- 7. weak tables and a full collection: entries whose keys died are gone
local weak = setmetatable({}, { __mode = "k" })
local keep = {}
for i = 1, 10000 do
  local k = {}
  weak[k] = i
  if i % 10 == 0 then keep[#keep + 1] = k end
end
collectgarbage("collect")
local alive = 0
for _ in pairs(weak) do alive = alive + 1 end
print("weak", alive, #keep)
