-- Neovim 0.12 and later: the built-in vim.lsp.inline_completion shows, cycles and accepts
-- the drafts (and runs the item's command, inkling.accept, through the client). This module
-- adds what it lacks: word / line acceptance, dismiss, and reading the ghost text.
local util = require("inkling.util")
local server = require("inkling.server")

local api = vim.api
local ic = vim.lsp.inline_completion
local M = {
  builtin = true,
  enabled = true,
  allowed = function(_) return true end,   -- per buffer / file type switch (set by init)
}

function M.available()
  return ic ~= nil and ic.enable ~= nil and ic.get ~= nil
end

function M.attach(buf)
  if M.enabled and M.allowed(buf) then
    ic.enable(true, { bufnr = buf })
  end
end

--- Apply the switches (b:inkling_enabled, g:inkling_filetypes) to every attached buffer.
function M.refresh()
  for buf in pairs(server.buffers) do
    if api.nvim_buf_is_valid(buf) then
      ic.enable(M.enabled and M.allowed(buf), { bufnr = buf })
    end
  end
end

local function partial(how)
  return function(item)
    local text = item.insert_text
    text = type(text) == "table" and (text.value or "") or text or ""
    local pos = api.nvim_win_get_cursor(0)
    local row, col = pos[1] - 1, pos[2]
    if item.range and item.range.start and item.range.start.row == row then
      local typed = api.nvim_buf_get_text(0, row, item.range.start.col, row, col, {})[1] or ""
      if util.starts_with(text, typed) then
        text = text:sub(#typed + 1)
      end
    end
    local piece = how == "word" and util.next_word(text) or util.next_line(text)
    local lines = util.split_lines(piece)
    api.nvim_buf_set_text(0, row, col, row, col, lines)
    api.nvim_win_set_cursor(0, { row + #lines, (#lines == 1 and col or 0) + #lines[#lines] })
    if piece == text and item.command then
      server.request("workspace/executeCommand",
        { command = item.command.command, arguments = item.command.arguments }, function() end, 0)
    end
  end
end

function M.accept(how)
  if how == "all" then
    return ic.get({ bufnr = 0 })
  end
  return ic.get({ bufnr = 0, on_accept = partial(how) })
end

function M.cycle(delta)
  if ic.select then
    ic.select({ bufnr = 0, count = delta })
    return true
  end
  return false
end

function M.dismiss()
  local had = M.ghost_text() ~= nil
  if had then     -- disabling and enabling again drops the candidate and pending requests
    ic.enable(false, { bufnr = 0 })
    ic.enable(true, { bufnr = 0 })
  end
  return had
end

function M.ghost_text()
  local ns = api.nvim_get_namespaces()["nvim.lsp.inline_completion"]
  if not ns then
    return nil
  end
  local marks = api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })
  if #marks == 0 then
    return nil
  end
  local d = marks[1][4]
  local parts = {}
  for _, chunk in ipairs(d.virt_text or {}) do
    parts[#parts + 1] = chunk[1]
  end
  local out = { table.concat(parts) }
  for _, l in ipairs(d.virt_lines or {}) do
    local p = {}
    for _, chunk in ipairs(l) do
      p[#p + 1] = chunk[1]
    end
    out[#out + 1] = table.concat(p)
  end
  return table.concat(out, "\n")
end

function M.set_enabled(on)
  M.enabled = on
  M.refresh()
end

function M.label()
  return nil
end

return M
