-- inkling for Neovim: ghost text from the inkling language server.
--
--   require("inkling").setup({
--     python = "/path/to/.venv/bin/python",          -- or cmd = { "inkling", "serve" }
--     init_options = { completion = { decoder = "branches" } },  -- the server's options tree
--   })
--
-- Works on Neovim 0.7 and later; on 0.12 and later it uses vim.lsp.inline_completion.
local util = require("inkling.util")
local config = require("inkling.config")
local server = require("inkling.server")

local api = vim.api
local M = { cfg = nil }

local engine        -- inkling.ghost (before 0.12) or inkling.builtin (0.12+)
local group         -- the autocommand group

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

--- Ask for a suggestion now (the manual-trigger key, <M-\>): an invoked request.
function M.trigger()
  if not engine or not engine.trigger then
    return false
  end
  return engine.trigger()
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

-- --------------------------------------------------------------------- switches
--- Why ghost text is off in `buf` ("off", "off for this buffer", "off for lua"), or nil.
--- Like copilot.vim: `b:inkling_enabled` (b:copilot_enabled) and `g:inkling_filetypes`
--- (g:copilot_filetypes: `{ markdown = false }` or `{ ["*"] = false, python = true }`).
function M.off_reason(buf)
  if M.cfg == nil or not M.cfg.enabled then
    return "off"
  end
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  if not api.nvim_buf_is_valid(buf) then
    return nil
  end
  local b = vim.b[buf].inkling_enabled
  if b == false or b == 0 then
    return "off for this buffer"
  end
  local fts = vim.g.inkling_filetypes
  if type(fts) == "table" then
    local ft = vim.bo[buf].filetype
    local on = fts[ft]
    if on == nil then
      on = fts["*"]
    end
    if on == false or on == 0 then
      return "off for " .. (ft ~= "" and ft or "this file type")
    end
  end
  return nil
end

--- Whether ghost text is on: at all (no argument), or in buffer `buf`.
function M.is_enabled(buf)
  if M.cfg == nil or not M.cfg.enabled then
    return false
  end
  return buf == nil or M.off_reason(buf) == nil
end

local function refresh()
  if engine and engine.refresh then
    engine.refresh()
  end
  if engine and M.cfg and not M.is_enabled(api.nvim_get_current_buf()) then
    engine.dismiss()
  end
  pcall(vim.cmd, "redrawstatus")
end

function M.enable(on)
  if not M.cfg then
    return
  end
  M.cfg.enabled = on ~= false
  engine.set_enabled(M.cfg.enabled)
  refresh()
end

function M.toggle()
  M.enable(not M.is_enabled())
  vim.notify("inkling " .. (M.is_enabled() and "enabled" or "disabled"), vim.log.levels.INFO)
end

--- Ghost text on / off in one buffer (sets b:inkling_enabled).
function M.enable_buffer(on, buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  vim.b[buf].inkling_enabled = on ~= false
  refresh()
end

--- Ghost text on / off for a file type (sets g:inkling_filetypes[ft]).
function M.enable_filetype(ft, on)
  ft = (ft == nil or ft == "") and vim.bo.filetype or ft
  local fts = vim.g.inkling_filetypes
  fts = type(fts) == "table" and fts or {}
  fts[ft] = on ~= false
  vim.g.inkling_filetypes = fts
  refresh()
end

function M.toggle_buffer()
  local buf = api.nvim_get_current_buf()
  M.enable_buffer(M.off_reason(buf) == "off for this buffer", buf)
  vim.notify("inkling " .. (M.is_enabled(buf) and "enabled" or "disabled") .. " in this buffer",
    vim.log.levels.INFO)
end

function M.toggle_filetype()
  local ft = vim.bo.filetype
  local fts = vim.g.inkling_filetypes
  local on = type(fts) == "table" and (fts[ft] == false or fts[ft] == 0
    or (fts[ft] == nil and (fts["*"] == false or fts["*"] == 0)))
  M.enable_filetype(ft, on)
  vim.notify("inkling " .. (on and "enabled" or "disabled") .. " for " .. ft, vim.log.levels.INFO)
end

local setup_plugin_engine

--- Automatic (as you type) or manual (only the trigger and next-draft keys) suggestions,
--- as copilot.lua's suggestion.auto_trigger.
function M.set_auto_trigger(on)
  if not M.cfg then
    return
  end
  M.cfg.auto_trigger = on ~= false
  if engine.builtin and not M.cfg.auto_trigger then
    -- Neovim's own inline completion asks as you type: the plugin's ghost text takes over
    engine.set_enabled(false)
    engine = setup_plugin_engine(M.cfg)
  end
  engine.auto_trigger = M.cfg.auto_trigger
  pcall(vim.cmd, "redrawstatus")
end

function M.toggle_auto_trigger()
  M.set_auto_trigger(not (M.cfg and M.cfg.auto_trigger))
  local manual = not M.cfg.auto_trigger
  vim.notify("inkling: " .. (manual and "manual" or "automatic") .. " suggestions"
    .. (manual and M.cfg.keys.trigger and (" (" .. M.cfg.keys.trigger .. " asks for one)") or ""),
    vim.log.levels.INFO)
end

--- A statusline component: "inkling: ready 42ms", "inkling: loading 40%",
--- "inkling: error (server not found: inkling)", "inkling: off for this buffer"; "" in
--- buffers the plugin is not attached to.
function M.statusline()
  if not M.cfg then
    return ""
  end
  local buf = api.nvim_get_current_buf()
  if not server.buffers[buf] then
    return ""
  end
  local off = M.off_reason(buf)
  if off then
    return "inkling: " .. off
  end
  local text = server.statusline()
  if not M.cfg.auto_trigger then
    text = text .. " (manual)"
  end
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
  map(keys.trigger, "trigger", false)
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
  cmd("InklingToggleBuffer", M.toggle_buffer, { desc = "inkling: ghost text on / off in this buffer" })
  cmd("InklingToggleFiletype", M.toggle_filetype,
    { desc = "inkling: ghost text on / off for this file type" })
  cmd("InklingToggleAutoTrigger", M.toggle_auto_trigger,
    { desc = "inkling: automatic / manual suggestions" })
  cmd("InklingRestart", M.restart, { desc = "inkling: restart the server" })
  cmd("InklingStatus", function()
    local off = server.buffers[api.nvim_get_current_buf()] and M.off_reason(0)
    print(off and ("inkling: " .. off) or server.describe())
  end, { desc = "inkling: the server's state, in full" })
end

local function define_highlight(name)
  -- grey and italic: ghost text must not look like the comments around it
  api.nvim_set_hl(0, name, { fg = "#808080", ctermfg = 244, italic = true, default = true })
end

--- The plugin's own ghost text (inkling.ghost) and its autocommands.
setup_plugin_engine = function(cfg)
  local ghost = require("inkling.ghost")
  ghost.enabled = cfg.enabled
  ghost.debounce_ms = cfg.debounce_ms
  ghost.hl_group = cfg.hl_group
  ghost.auto_trigger = cfg.auto_trigger
  ghost.allowed = function(buf)
    return M.off_reason(buf) == nil
  end
  table.insert(server.on_initialized, ghost.on_server_initialized)
  api.nvim_create_autocmd("TextChangedI", { group = group, callback = ghost.on_text_changed })
  api.nvim_create_autocmd("CursorMovedI", { group = group, callback = ghost.on_cursor_moved })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, { group = group, callback = ghost.on_insert_leave })
  return ghost
end

function M.setup(user)
  local cfg = config.resolve(user)
  M.cfg = cfg
  server.setup(cfg)
  group = api.nvim_create_augroup("inkling", { clear = true })
  define_highlight(cfg.hl_group)
  api.nvim_create_autocmd("ColorScheme", {
    group = group,
    callback = function()
      define_highlight(cfg.hl_group)
    end,
  })

  -- Neovim's own inline completion (0.12+) asks as you type: manual mode uses the plugin's
  if cfg.auto_trigger and use_builtin(cfg) then
    engine = require("inkling.builtin")
    engine.enabled = cfg.enabled
    engine.allowed = function(buf)
      return M.off_reason(buf) == nil
    end
    api.nvim_create_autocmd("LspAttach", {
      group = group,
      callback = function(args)
        if engine.builtin and args.data and args.data.client_id == server.client_id then
          engine.attach(args.buf)
        end
      end,
    })
  else
    engine = setup_plugin_engine(cfg)
  end

  api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = cfg.filetypes,
    callback = function(args)
      local id = server.attach(args.buf)
      if id and engine.builtin then
        engine.attach(args.buf)
      end
    end,
  })
  commands()
  set_keys(cfg.keys)
  server.start_all()
  return M
end

return M
