-- Ghost text for Neovim before 0.12 (0.7 included): textDocument/inlineCompletion requests
-- as you type (debounced, cancelled when you keep typing), drafts shown with extmarks
-- (virt_text for the first line, virt_lines for the others), cycling, whole / word / line
-- acceptance, and workspace/executeCommand with the item's command on acceptance.
local util = require("inkling.util")
local server = require("inkling.server")

local api = vim.api
local uv = vim.uv or vim.loop
local M = {
  ns = api.nvim_create_namespace("inkling"),
  timer = nil,
  pending = nil,     -- {id=request id, seq=...}
  seq = 0,
  responses = 0,     -- answers received, and the last one that was still current:
  last_answer = nil, -- {row, col, drafts} (for tests)
  sug = nil,         -- the suggestion on screen, see set_suggestion
  enabled = true,
  auto_trigger = true,  -- ask as you type; false: only on the trigger / next-draft keys
  allowed = function(_) return true end,   -- per buffer / file type switch (set by init)
  waiting = nil,        -- a request made before the server was initialized: sent once it is
  debounce_ms = 60,
  hl_group = "InklingGhost",
}

local has_inline = vim.fn.has("nvim-0.10") == 1
local AUTOMATIC, INVOKED = 2, 1

local function cursor()
  local pos = api.nvim_win_get_cursor(0)
  return pos[1] - 1, pos[2]
end

local function in_insert()
  local mode = api.nvim_get_mode().mode
  return mode:sub(1, 1) == "i" or mode:sub(1, 1) == "R"
end

-- ------------------------------------------------------------------ requests
function M.cancel()
  if M.timer then
    M.timer:stop()
  end
  if M.pending then
    local client = server.client()
    if client then
      pcall(server.call, client, "cancel_request", M.pending.id)
    end
    M.pending = nil
  end
end

local function item_text(item)
  local text = item.insertText
  if type(text) == "table" then    -- a snippet: show and insert its text without tab stops
    text = (text.value or ""):gsub("%$%b{}", ""):gsub("%$%d+", "")
  end
  return type(text) == "string" and text or ""
end

--- Turn the server's items into drafts anchored at byte positions of the buffer.
local function to_drafts(buf, items, row, col)
  local drafts = {}
  for _, item in ipairs(items) do
    local text = item_text(item)
    local arow, acol, erow, ecol = row, col, row, col
    if type(item.range) == "table" and item.range.start then
      local s, e = item.range.start, item.range["end"]
      local sline = api.nvim_buf_get_lines(buf, s.line, s.line + 1, false)[1] or ""
      local eline = api.nvim_buf_get_lines(buf, e.line, e.line + 1, false)[1] or ""
      arow, acol = s.line, util.byte_col(sline, s.character)
      erow, ecol = e.line, util.byte_col(eline, e.character)
    end
    if text ~= "" and arow == row and acol <= col then
      -- text between the item's start and the cursor must already be typed: keep the rest
      local typed = api.nvim_buf_get_text(buf, arow, acol, row, col, {})[1] or ""
      if util.starts_with(text, typed) then
        text = text:sub(#typed + 1)
        if text ~= "" then
          drafts[#drafts + 1] = { text = text, command = item.command, end_row = erow, end_col = ecol }
        end
      end
    end
  end
  return drafts
end

local function set_suggestion(buf, row, col, drafts, index)
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  M.sug = { buf = buf, row = row, col = col, prefix = line:sub(1, col), drafts = drafts, index = index or 1 }
end

local function on_result(ctx, err, result, opts)
  M.responses = M.responses + 1
  if M.pending and M.pending.seq == ctx.seq then
    M.pending = nil
  end
  if ctx.seq ~= M.seq or err or not result or result == vim.NIL then
    return
  end
  local buf = ctx.buf
  if not M.enabled or buf ~= api.nvim_get_current_buf() or not in_insert() then
    return
  end
  local row, col = cursor()
  if row ~= ctx.row or col ~= ctx.col or api.nvim_buf_get_changedtick(buf) ~= ctx.tick then
    return                                  -- the text moved on; a newer request follows
  end
  local drafts = to_drafts(buf, result.items or result, row, col)
  M.last_answer = { row = row, col = col, drafts = #drafts }
  local shown = M.sug and M.sug.buf == buf and M.visible() or nil
  if shown and (opts.cycle or #drafts > 0) then
    -- The draft on screen stays (the one the user chose, also after cycling and accepting a
    -- word of it), re-anchored at the cursor; the new drafts follow it. Cycling moves on.
    local merged, seen = {}, {}
    merged[1] = { text = shown.text, command = shown.draft.command,
                  end_row = shown.draft.end_row, end_col = shown.draft.end_col }
    seen[shown.text] = true
    for _, d in ipairs(drafts) do
      if not seen[d.text] then
        merged[#merged + 1], seen[d.text] = d, true
      end
    end
    local index = 1
    if opts.cycle and #merged > 1 then
      index = opts.cycle > 0 and 2 or #merged
    end
    set_suggestion(buf, row, col, merged, index)
  elseif #drafts > 0 then
    set_suggestion(buf, row, col, drafts, 1)
  else
    return
  end
  M.render()
end

--- Ask the server for drafts at the cursor. kind: 2 automatic, 1 invoked.
function M.request(kind, opts)
  opts = opts or {}
  local buf = api.nvim_get_current_buf()
  if not M.enabled or not server.buffers[buf] or not M.allowed(buf) then
    return false
  end
  M.cancel()
  local row, col = cursor()
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  M.seq = M.seq + 1
  local ctx = { seq = M.seq, buf = buf, row = row, col = col }
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = row, character = util.utf16_col(line, col) },
    context = { triggerKind = kind or AUTOMATIC },
  }
  -- the request flushes pending didChange notifications first, then we read the tick
  local ok, id = server.request("textDocument/inlineCompletion", params, function(err, result)
    on_result(ctx, err, result, opts)
  end, buf)
  ctx.tick = api.nvim_buf_get_changedtick(buf)
  if ok and id then
    M.pending = { id = id, seq = ctx.seq }
    M.waiting = nil
  elseif server.starting() then
    -- the server is still starting: ask again once it is initialized, if nothing moved
    M.waiting = { buf = buf, row = row, col = col, tick = ctx.tick, kind = kind, opts = opts }
  end
  return ok
end

--- The server is initialized: the request it could not take yet, if still where it was.
function M.on_server_initialized()
  local w = M.waiting
  M.waiting = nil
  if not w or w.buf ~= api.nvim_get_current_buf() or not in_insert() then
    return
  end
  local row, col = cursor()
  if row == w.row and col == w.col and api.nvim_buf_get_changedtick(w.buf) == w.tick then
    M.request(w.kind, w.opts)
  end
end

local function schedule_request()
  if not M.timer then
    M.timer = uv.new_timer()
  end
  M.timer:stop()
  M.timer:start(M.debounce_ms, 0, vim.schedule_wrap(function()
    if in_insert() then
      M.request(AUTOMATIC)
    end
  end))
end

-- ------------------------------------------------------------------ display
--- The draft on screen and what remains of it after what was typed since it was shown:
--- {text=remaining, draft=..., typed=...}, or nil.
function M.visible()
  local s = M.sug
  if not s or s.buf ~= api.nvim_get_current_buf() then
    return nil
  end
  local row, col = cursor()
  if row < s.row or (row == s.row and col < s.col) then
    return nil
  end
  local line = api.nvim_buf_get_lines(s.buf, s.row, s.row + 1, false)[1] or ""
  if line:sub(1, s.col) ~= s.prefix then
    return nil
  end
  -- what was typed since the drafts were shown, a newline (and its indent) included
  local ok, lines = pcall(api.nvim_buf_get_text, s.buf, s.row, s.col, row, col, {})
  if not ok then
    return nil
  end
  local typed = table.concat(lines, "\n")
  local draft = s.drafts[s.index]
  local rest = draft and util.remaining(draft.text, typed)
  if rest then
    return { text = rest, draft = draft, typed = typed }
  end
  -- the shown draft no longer fits; another one may (typing along a different draft)
  for i, d in ipairs(s.drafts) do
    rest = util.remaining(d.text, typed)
    if rest then
      s.index = i
      return { text = rest, draft = d, typed = typed }
    end
  end
  return nil
end

local function display(text)
  local ts = vim.bo.tabstop > 0 and vim.bo.tabstop or 8
  return (text:gsub("\t", string.rep(" ", ts)))
end

function M.clear()
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) then
      api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
    end
  end
end

function M.render()
  M.clear()
  local v = M.visible()
  if not v then
    M.sug = nil
    return
  end
  local buf = M.sug.buf
  local row, col = cursor()
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  local suffix = display(line:sub(col + 1))
  local lines = util.split_lines(v.text)
  local hl = M.hl_group
  local first = display(lines[1])
  local opts = { hl_mode = "combine", priority = 200 }
  if #lines == 1 then
    if suffix == "" then
      opts.virt_text, opts.virt_text_pos = { { first, hl } }, "overlay"
    elseif has_inline then
      opts.virt_text, opts.virt_text_pos = { { first, hl } }, "inline"
    else    -- overlay the rest of the line with the draft followed by the rest itself
      opts.virt_text, opts.virt_text_pos = { { first, hl }, { suffix, "Normal" } }, "overlay"
    end
  else
    -- the rest of the line goes after the last line of the draft
    local pad = math.max(vim.fn.strdisplaywidth(suffix) - vim.fn.strdisplaywidth(first), 0)
    opts.virt_text = { { first, hl } }
    if pad > 0 then
      table.insert(opts.virt_text, { string.rep(" ", pad), "Normal" })
    end
    opts.virt_text_pos = "overlay"
    opts.virt_lines = {}
    for i = 2, #lines do
      local chunks = { { display(lines[i]), hl } }
      if i == #lines and suffix ~= "" then
        table.insert(chunks, { suffix, "Normal" })
      end
      table.insert(opts.virt_lines, chunks)
    end
  end
  api.nvim_buf_set_extmark(buf, M.ns, row, col, opts)
  if #M.sug.drafts > 1 then
    M.sug.label = string.format("%d/%d", M.sug.index, #M.sug.drafts)
  end
end

-- ------------------------------------------------------------------ events
function M.on_text_changed()
  local buf = api.nvim_get_current_buf()
  if not M.enabled or not server.buffers[buf] or not M.allowed(buf) then
    return
  end
  M.cancel()
  M.render()          -- typing along the ghost text keeps the rest of it on screen
  if M.auto_trigger then
    schedule_request()
  end
end

function M.on_cursor_moved()
  if M.sug then
    M.render()
  end
end

function M.on_insert_leave()
  M.cancel()
  M.waiting = nil
  M.sug = nil
  M.clear()
end

-- ------------------------------------------------------------------ actions
local function execute(command)
  if type(command) ~= "table" or not command.command then
    return
  end
  server.request("workspace/executeCommand", { command = command.command, arguments = command.arguments },
    function(err)
      if err then
        vim.notify("inkling: " .. tostring(err.message or err), vim.log.levels.WARN)
      end
    end, api.nvim_get_current_buf())
end

local function insert(text)
  local row, col = cursor()
  local lines = util.split_lines(text)
  api.nvim_buf_set_text(0, row, col, row, col, lines)
  local end_row = row + #lines - 1
  local end_col = (#lines == 1 and col or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { end_row + 1, end_col })
end

--- Accept all ("all"), the next word ("word") or the rest of the line ("line") of the
--- draft on screen. Returns false when there is none.
function M.accept(how)
  local v = M.visible()
  if not v then
    return false
  end
  M.cancel()
  local piece = v.text
  if how == "word" then
    piece = util.next_word(v.text)
  elseif how == "line" then
    piece = util.next_line(v.text)
  end
  local whole = piece == v.text
  local draft = v.draft
  if whole then
    M.sug = nil
    M.clear()
    -- the item may replace text after the cursor (its range ends there)
    local row, col = cursor()
    if draft.end_row == row and draft.end_col and draft.end_col > col then
      api.nvim_buf_set_text(0, row, col, row, draft.end_col, { "" })
    end
  end
  insert(piece)
  if whole then
    execute(draft.command)
    return true
  end
  -- the rest of the draft (and of the drafts that agree with it so far) stays on screen,
  -- anchored at the cursor (a piece ending in a newline moved it to the next line)
  local s = M.sug
  local rest = {}
  for i, d in ipairs(s.drafts) do
    local shown = util.remaining(d.text, v.typed) or (v.typed == "" and d.text or nil)
    local left = shown and util.remaining(shown, piece)
    if left then
      local r = { text = left, command = d.command, end_row = d.end_row, end_col = d.end_col }
      table.insert(rest, i == s.index and 1 or #rest + 1, r)
    end
  end
  local row, col = cursor()
  set_suggestion(api.nvim_get_current_buf(), row, col, rest, 1)
  M.render()
  return true
end

--- Next (delta 1) or previous (-1) draft; asks for more drafts (an invoked request) when
--- only one is there, and for a suggestion when none is shown.
function M.cycle(delta)
  local v = M.visible()
  if not v then
    return M.request(INVOKED)
  end
  local s = M.sug
  if #s.drafts > 1 then
    s.index = (s.index - 1 + delta) % #s.drafts + 1
    M.render()
    return true
  end
  return M.request(INVOKED, { cycle = delta })
end

--- Ask for a suggestion now (the manual-trigger key): an invoked request, several drafts.
function M.trigger()
  return M.request(INVOKED)
end

function M.dismiss()
  local had = M.visible() ~= nil
  M.cancel()
  M.sug = nil
  M.clear()
  return had
end

function M.ghost_text()
  local v = M.visible()
  return v and v.text or nil
end

function M.label()
  local s = M.sug
  return s and #s.drafts > 1 and string.format("%d/%d", s.index, #s.drafts) or nil
end

function M.set_enabled(on)
  M.enabled = on
  if not on then
    M.dismiss()
  end
end

return M
