-- Pure helpers (no editor state): positions, partial acceptance, backoff, status text.
-- Everything here works on Neovim 0.7 and later and is unit-tested headless.
local M = {}

--- UTF-16 code units in the first `col` bytes of `line` (LSP's default position encoding).
--- Works on any byte offset, also one inside a multi-byte character (counted up to it).
function M.utf16_col(line, col)
  local units, i = 0, 1
  col = math.min(col, #line)
  while i <= col do
    local b = line:byte(i)
    local len = (b >= 0xF0 and 4) or (b >= 0xE0 and 3) or (b >= 0xC0 and 2) or 1
    units = units + (len == 4 and 2 or 1)
    i = i + len
  end
  return units
end

--- The byte offset in `line` of the UTF-16 offset `units` (clamped to the line).
function M.byte_col(line, units)
  local count, i = 0, 1
  while i <= #line and count < units do
    local b = line:byte(i)
    local len = (b >= 0xF0 and 4) or (b >= 0xE0 and 3) or (b >= 0xC0 and 2) or 1
    count = count + (len == 4 and 2 or 1)
    i = i + len
  end
  return math.min(i - 1, #line)
end

--- Split on "\n" keeping empty pieces: "a\n" -> {"a", ""}.
function M.split_lines(text)
  local lines, start = {}, 1
  while true do
    local nl = text:find("\n", start, true)
    if not nl then
      lines[#lines + 1] = text:sub(start)
      return lines
    end
    lines[#lines + 1] = text:sub(start, nl - 1)
    start = nl + 1
  end
end

function M.starts_with(s, prefix)
  return s:sub(1, #prefix) == prefix
end

--- What is left of a draft once `typed` (the text between where it was offered and the
--- cursor, "\n" between lines) has been typed; nil when the typing left the draft or nothing
--- of it is left. After a newline the draft contains, other indentation than the draft's
--- (the editor's auto-indent) is fine: the rest of that line follows the cursor.
function M.remaining(draft, typed)
  if M.starts_with(draft, typed) then
    return #draft > #typed and draft:sub(#typed + 1) or nil
  end
  local nl = typed:match(".*()\n")
  if not nl then
    return nil
  end
  local head, indent = typed:sub(1, nl), typed:sub(nl + 1)
  if indent:find("%S") or not M.starts_with(draft, head) then
    return nil
  end
  local rest = draft:sub(#head + 1)
  local own = rest:match("^[ \t]*")
  local left = M.starts_with(own, indent) and rest:sub(#indent + 1) or rest:sub(#own + 1)
  return left ~= "" and left or nil
end

--- Text shortened to at most `max` display cells, with "..." when cut.
function M.shorten(text, max)
  if vim.fn.strdisplaywidth(text) <= max then
    return text
  end
  local out = text
  while #out > 0 and vim.fn.strdisplaywidth(out) > max - 3 do
    out = vim.fn.strcharpart(out, 0, vim.fn.strchars(out) - 1)
  end
  return out .. "..."
end

--- A path or command for a short message: its last part when it is long.
function M.short_name(path)
  if #path <= 24 then
    return path
  end
  return vim.fn.fnamemodify(path, ":t")
end

--- The next word of a suggestion: leading blanks, then a run of word characters or a run
--- of punctuation; a newline alone when the text starts with one.
function M.next_word(text)
  if text == "" then
    return ""
  end
  if text:sub(1, 1) == "\n" then
    return "\n" .. (text:match("^\n([ \t]*)") or "")
  end
  return text:match("^[ \t]*[%w_]+")
    or text:match("^[ \t]*[^%w_%s]+")
    or text:match("^[ \t]+")
    or text:sub(1, 1)
end

--- The rest of the current line of a suggestion; when it starts with a newline, the newline
--- and the following line.
function M.next_line(text)
  if text == "" then
    return ""
  end
  local nl = text:find("\n", 1, true)
  if not nl then
    return text
  end
  if nl > 1 then
    return text:sub(1, nl - 1)
  end
  local second = text:find("\n", 2, true)
  return second and text:sub(1, second - 1) or text
end

--- Restart delay (ms) for the n-th consecutive failure (n >= 1): initial * factor^(n-1),
--- capped at max.
function M.backoff_ms(n, opts)
  opts = opts or {}
  local initial, factor, max = opts.initial_ms or 1000, opts.factor or 2, opts.max_ms or 30000
  local delay = initial * factor ^ (math.max(n, 1) - 1)
  return math.floor(math.min(delay, max))
end

--- Status text for a statusline from the last inkling/status notification.
--- status: {state=..., message=..., progress=..., latencyMs=...} (vim.NIL for nulls).
function M.format_status(status, opts)
  opts = opts or {}
  local prefix = opts.prefix or "inkling"
  if type(status) ~= "table" or not status.state then
    return prefix .. ": starting"
  end
  local function val(x)
    if x == nil or x == vim.NIL then
      return nil
    end
    return x
  end
  local state = status.state
  local progress, latency, message = val(status.progress), val(status.latencyMs), val(status.message)
  if state == "loading" or state == "indexing" then
    return string.format("%s: %s%s", prefix, state, progress and string.format(" %d%%", progress) or "")
  elseif state == "ready" then
    return string.format("%s: ready%s", prefix, latency and string.format(" %dms", math.floor(latency + 0.5)) or "")
  elseif state == "error" then
    -- the short reason ("server not found: inkling"), never a second "inkling:" prefix
    local text = message and tostring(message):gsub("^inkling:%s*", "") or ""
    text = M.shorten(text, opts.max_message or 48)
    return string.format("%s: error%s", prefix, text ~= "" and (" (" .. text .. ")") or "")
  elseif state == "off" then     -- "off", or why: "off for this buffer"
    local why = message and tostring(message) or ""
    return string.format("%s: %s", prefix, why:match("^off") and why or "off")
  end
  return string.format("%s: %s", prefix, state)
end

--- inkling/stats as lines of text (for :InklingStats).
function M.format_stats(stats)
  local function val(x)
    if x == nil or x == vim.NIL then
      return "-"
    end
    if type(x) == "number" and x ~= math.floor(x) then
      return string.format("%.1f", x)
    end
    return tostring(x)
  end
  local lat = type(stats.latency_ms) == "table" and stats.latency_ms or {}
  return {
    "inkling stats",
    string.format("  state       %s", val(stats.state)),
    string.format("  requests    %s", val(stats.requests)),
    string.format("  answered    %s", val(stats.answered)),
    string.format("  cancelled   %s", val(stats.cancelled)),
    string.format("  accepted    %s", val(stats.accepted)),
    string.format("  errors      %s", val(stats.errors)),
    string.format("  latency     p50 %s ms, p95 %s ms (%s samples)", val(lat.p50), val(lat.p95), val(lat.count)),
    string.format("  documents   %s", val(stats.documents)),
    string.format("  cache       %s, %s refreshes", val(stats.cache_mode), val(stats.refreshes)),
  }
end

--- Deep merge of plain tables (lists, tables with a [1], are replaced, not merged).
function M.merge(base, extra)
  local out = {}
  for k, v in pairs(base or {}) do
    out[k] = v
  end
  for k, v in pairs(extra or {}) do
    if type(v) == "table" and type(out[k]) == "table" and v[1] == nil and out[k][1] == nil then
      out[k] = M.merge(out[k], v)
    else
      out[k] = v
    end
  end
  return out
end

return M
