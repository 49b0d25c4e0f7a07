-- wrk script of tools/metrics_load.sh: paces each connection (PACE_MS between a response and the next request), checks
-- every response of GET /metrics (status 200; every line a "# HELP", a "# TYPE" or a sample of the text exposition
-- format, version 0.0.4) and keeps one body in KEEP_EVERY under OUT for promtool.
local pace = tonumber(os.getenv("PACE_MS") or "10")
local every = tonumber(os.getenv("KEEP_EVERY") or "500")
local dir = os.getenv("OUT") or "/tmp"
local threads = {}

responses, invalid, kept, first_invalid = 0, 0, 0, ""

function setup(thread)
  table.insert(threads, thread)
end

function delay()
  return pace
end

local function valid_line(line)
  if line:sub(1, 1) == "#" then
    return line:find("^# HELP [%a_:][%w_:]* ") ~= nil or line:find("^# TYPE [%a_:][%w_:]* %a+$") ~= nil
  end
  local rest = line:match("^[%a_:][%w_:]*(.*)$")
  if rest == nil then return false end
  if rest:sub(1, 1) == "{" then
    rest = rest:match("^{[%a_][%w_]*=\"[^\"]*\"[^}]*}(.*)$")
    if rest == nil then return false end
  end
  return rest:find("^ [-+%w%.]+$") ~= nil
end

-- nil when every line is valid, else the first invalid line
local function invalid_line(body)
  if #body == 0 or body:sub(-1) ~= "\n" then return "(empty or unterminated body)" end
  for line in body:gmatch("([^\n]*)\n") do
    if not valid_line(line) then return line end
  end
  return nil
end

function response(status, headers, body)
  responses = responses + 1
  local bad = status ~= 200 and body:sub(1, 200) or invalid_line(body)
  if bad ~= nil then
    invalid = invalid + 1
    if first_invalid == "" then first_invalid = "status " .. status .. ": " .. bad end
  end
  if responses % every == 1 then
    kept = kept + 1
    local f = io.open(dir .. "/body" .. kept .. ".txt", "w")
    f:write(body)
    f:close()
  end
end

function done(summary, latency, requests)
  local n, bad, k, first = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    n = n + t:get("responses")
    bad = bad + t:get("invalid")
    k = k + t:get("kept")
    if first == "" then first = t:get("first_invalid") end
  end
  local e = summary.errors
  io.write(string.format("lua: responses %d invalid %d kept %d rate %.1f errors %d p99_ms %.2f max_ms %.2f\n", n, bad, k,
                         summary.requests / (summary.duration / 1e6),
                         e.connect + e.read + e.write + e.status + e.timeout,
                         latency:percentile(99) / 1000, latency.max / 1000))
  if first ~= "" then io.write("lua: first invalid response: " .. first .. "\n") end
end
