-- inkling for Neovim: ghost text from the inkling language server.
--
--   require("inkling").setup({
--     python = "/path/to/.venv/bin/python",          -- or cmd = { "inkling", "serve" }
--     init_options = { completion = { drafts = 3 } },  -- the server's options tree
--   })
--
-- Works on Neovim 0.7 and later; on 0.12 and later it uses vim.lsp.inline_completion.
local util = require("inkling.util")
local config = require("inkling.config")
local server = require("inkling.server")

local api = vim.api
local M = { cfg = nil }

local engine        -- inkling.ghost (before 0.12) or inkling.builtin (0.12+)

local function use_builtin(cfg)
  if cfg.builtin == false or vim.fn.has("nvim-0.12") ~= 1 then
    return false
  end
  return require("inkling.builtin").available()
end

local function termcodes(keys)
  return api.nvim_replace_termcodes(keys, true, false, true)
end

-- --------------------------------------------------------------------- actions
function M.accept()
  return engine and engine.accept("all") or false
end

function M.accept_word()
  return engine and engine.accept("word") or false
end

function M.accept_line()
  return engine and engine.accept("line") or false
end

function M.next()
  return engine and engine.cycle(1) or false
end

function M.prev()
  return engine and engine.cycle(-1) or false
end

function M.dismiss()
  return engine and engine.dismiss() or false
end

--- The ghost text on screen (what accepting would insert), or nil.
function M.ghost_text()
  return engine and engine.ghost_text() or nil
end

--- The last answer that arrived while still current: {row, col, drafts} (0-based row,
--- byte col), or nil (also with the built-in inline completion of 0.12+).
function M.last_answer()
  return engine and engine.last_answer or nil
end

function M.is_enabled()
  return M.cfg ~= nil and M.cfg.enabled
end

function M.enable(on)
  if not M.cfg then
    return
  end
  M.cfg.enabled = on ~= false
  engine.set_enabled(M.cfg.enabled)
  pcall(vim.cmd, "redrawstatus")
end

function M.toggle()
  M.enable(not M.is_enabled())
  vim.notify("inkling " .. (M.is_enabled() and "enabled" or "disabled"), vim.log.levels.INFO)
end

--- A statusline component: "inkling: ready 42ms", "inkling: loading 40%", "inkling: error (...)".
function M.statusline()
  if not M.cfg then
    return ""
  end
  if not M.cfg.enabled then
    return "inkling: off"
  end
  local text = server.statusline()
  local label = engine and engine.label and engine.label()
  return label and (text .. " [" .. label .. "]") or text
end

--- The last inkling/status params ({state, message, progress, latencyMs}).
function M.status()
  return server.status
end

--- inkling/stats: cb(err, stats).
function M.stats(cb)
  local ok = server.request("inkling/stats", vim.empty_dict(), function(err, result)
    cb(err, result)
  end, api.nvim_get_current_buf())
  if not ok then
    cb({ message = "the inkling server is not running" }, nil)
  end
end

function M.show_stats()
  M.stats(function(err, result)
    if err then
      vim.notify("inkling: " .. tostring(err.message or err), vim.log.levels.WARN)
      return
    end
    local lines = util.format_stats(result)
    local chunks = {}
    for _, l in ipairs(lines) do
      chunks[#chunks + 1] = { l .. "\n" }
    end
    api.nvim_echo(chunks, true, {})
  end)
end

--- Send new server options (the options tree) with workspace/didChangeConfiguration.
function M.configure(settings)
  server.configure(settings)
end

function M.restart()
  server.restart()
end

-- --------------------------------------------------------------------- setup
local function map(lhs, action, fallback)
  if not lhs or lhs == "" then
    return
  end
  vim.keymap.set("i", lhs, function()
    if fallback and M.ghost_text() == nil then
      -- nothing on screen: the key does what it would do without inkling
      api.nvim_feedkeys(termcodes(lhs), "in", false)
      return
    end
    M[action]()
  end, { silent = true, desc = "inkling: " .. action })
end

local function set_keys(keys)
  map(keys.accept, "accept", true)
  map(keys.accept_word, "accept_word", true)
  map(keys.accept_line, "accept_line", true)
  map(keys.next, "next", false)
  map(keys.prev, "prev", false)
  map(keys.dismiss, "dismiss", true)
end

local function commands()
  local cmd = api.nvim_create_user_command
  cmd("InklingStats", M.show_stats, { desc = "inkling: show the server's counters" })
  cmd("InklingToggle", M.toggle, { desc = "inkling: ghost text on / off" })
  cmd("InklingRestart", M.restart, { desc = "inkling: restart the server" })
  cmd("InklingStatus", function()
    print(M.statusline())
  end, { desc = "inkling: the server's state" })
end

function M.setup(user)
  local cfg = config.resolve(user)
  M.cfg = cfg
  server.setup(cfg)
  api.nvim_set_hl(0, cfg.hl_group, { link = "Comment", default = true })

  local builtin = use_builtin(cfg)
  engine = builtin and require("inkling.builtin") or require("inkling.ghost")
  engine.enabled = cfg.enabled
  if not builtin then
    engine.debounce_ms = cfg.debounce_ms
    engine.hl_group = cfg.hl_group
  end

  local group = api.nvim_create_augroup("inkling", { clear = true })
  api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = cfg.filetypes,
    callback = function(args)
      local id = server.attach(args.buf)
      if id and builtin then
        engine.attach(args.buf)
      end
    end,
  })
  if builtin then
    api.nvim_create_autocmd("LspAttach", {
      group = group,
      callback = function(args)
        if args.data and args.data.client_id == server.client_id then
          engine.attach(args.buf)
        end
      end,
    })
  else
    local ghost = engine
    api.nvim_create_autocmd("TextChangedI", { group = group, callback = ghost.on_text_changed })
    api.nvim_create_autocmd("CursorMovedI", { group = group, callback = ghost.on_cursor_moved })
    api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, { group = group, callback = ghost.on_insert_leave })
  end
  commands()
  set_keys(cfg.keys)
  server.start_all()
  return M
end

return M
