-- The server's lifecycle: start (vim.lsp.start on 0.8+, start_client + buf_attach_client on
-- 0.7), status from inkling/status, and restarts with backoff when it is missing or crashes.
-- A failure is reported once per outage (never a notification per restart).
local util = require("inkling.util")
local config = require("inkling.config")

local uv = vim.uv or vim.loop

local M = {
  cfg = nil,
  client_id = nil,
  status = nil,          -- the last inkling/status params (or our own error status)
  buffers = {},          -- buffers we attached
  failures = 0,          -- consecutive failures (backoff exponent)
  notified = false,      -- the current outage has been reported
  stopping = {},         -- client ids we asked to stop: their exit is no crash
  ready_at = nil,        -- when the server last said ready (uv.now())
  restart_timer = nil,
  our_ids = {},          -- every client id we started (to quiet Neovim's own exit notice)
  listeners = {},        -- functions called on status changes
  on_initialized = {},   -- functions called once a started server is initialized
}

local has_start = vim.lsp.start ~= nil             -- Neovim 0.8+
local method_calls = vim.fn.has("nvim-0.11") == 1   -- client:request() instead of client.request()

--- Call a method of an LSP client object on any version.
function M.call(client, name, ...)
  if method_calls then
    return client[name](client, ...)
  end
  return client[name](...)
end

local function redraw()
  pcall(vim.cmd, "redrawstatus")
  for _, fn in ipairs(M.listeners) do
    pcall(fn, M.status)
  end
end

function M.set_status(status)
  M.status = status
  if status.state == "ready" and not M.ready_at then
    M.ready_at = uv.now()
  end
  redraw()
end

function M.client()
  if not M.client_id then
    return nil
  end
  local client = vim.lsp.get_client_by_id(M.client_id)
  if client and not (client.is_stopped and M.call(client, "is_stopped")) then
    return client
  end
  return nil
end

local function root_dir(buf)
  local markers = M.cfg.root_markers or {}
  local name = vim.api.nvim_buf_get_name(buf)
  local dir = name ~= "" and vim.fn.fnamemodify(name, ":p:h") or vim.fn.getcwd()
  local cur = dir
  while cur and cur ~= "" do
    for _, marker in ipairs(markers) do
      if uv.fs_stat(cur .. "/" .. marker) then
        return cur
      end
    end
    local parent = vim.fn.fnamemodify(cur, ":h")
    if parent == cur then
      break
    end
    cur = parent
  end
  return vim.fn.getcwd()
end

-- Neovim itself announces "Client N quit with exit code ..." on every abnormal exit, which
-- would make one notification per restart. Our own message covers the outage once; the
-- notices about clients we started are dropped (others pass through untouched).
local function install_notify_filter()
  if M._filter_installed then
    return
  end
  M._filter_installed = true
  local original = vim.notify
  vim.notify = function(msg, level, opts)
    if type(msg) == "string" then
      local who = msg:match("^Client (%S+) quit with exit code")
      if who and (M.our_ids[tonumber(who) or -1] or who == "inkling") then
        return
      end
    end
    return original(msg, level, opts)
  end
end

local function schedule_restart()
  if M.restart_timer then
    return
  end
  local delay = util.backoff_ms(M.failures, M.cfg.restart)
  M.next_restart_ms = delay
  M.restart_timer = vim.defer_fn(function()
    M.restart_timer = nil
    M.start_all()
  end, delay)
end

--- A failure: error status, one message per outage, a restart with backoff.
--- `reason` is short ("server not found: inkling"); `detail` says all (`:InklingStatus`).
function M.fail(reason, detail)
  M.failures = M.failures + 1
  local delay = util.backoff_ms(M.failures, M.cfg.restart)
  M.set_status({ state = "error", message = reason, detail = detail or reason })
  if not M.notified then
    M.notified = true
    -- One line that fits the command line: a longer message would open the hit-enter
    -- prompt, which holds every timer (the restart too) until a key is pressed. Scheduled:
    -- failures can happen inside autocommands, whose errors would swallow the message.
    vim.schedule(function()
      local text = string.format("inkling: %s; retrying in %.0f s (:InklingStatus, :InklingRestart)",
        reason, delay / 1000)
      local room = math.max((vim.v.echospace or vim.o.columns - 12) - 1, 20)
      vim.api.nvim_echo({ { util.shorten(text, room), "ErrorMsg" } }, true, {})
    end)
  end
  schedule_restart()
end

local function on_exit(code, signal, id)
  if M.stopping[id] then
    M.stopping[id] = nil
    if M.client_id == nil and not M.restart_timer then
      M.set_status({ state = "off", message = "stopped" })
    end
    return
  end
  if id ~= M.client_id then
    return
  end
  M.client_id = nil
  -- a server that ran a good while before dying starts a new outage
  if M.ready_at and uv.now() - M.ready_at > 60000 then
    M.failures, M.notified = 0, false
  end
  M.ready_at = nil
  local how = (signal and signal ~= 0) and ("signal " .. tostring(signal)) or ("code " .. tostring(code))
  M.fail("exited, " .. how, string.format("the server exited (code %s, signal %s): %s",
    tostring(code), tostring(signal), table.concat(config.server_cmd(M.cfg), " ")))
end

local function lsp_config(buf)
  local handlers = {
    ["inkling/status"] = function(_, params)
      if type(params) == "table" then
        M.set_status(params)
      end
      return vim.NIL
    end,
  }
  return {
    name = "inkling",
    cmd = config.server_cmd(M.cfg),
    root_dir = M.root or root_dir(buf),
    -- only what the user set (nothing: the server's defaults); an empty table would be
    -- sent as a JSON list
    init_options = next(M.cfg.init_options or {}) ~= nil and M.cfg.init_options or nil,
    handlers = handlers,
    -- every keystroke reaches the server at once: it measures the typing cadence to
    -- debounce automatic requests, and requests flush pending changes anyway
    flags = { debounce_text_changes = 0 },
    on_init = function()
      if not M.status or M.status.state == "starting" then
        M.set_status({ state = "loading", message = "initialized", progress = 0 })
      end
      -- after this callback Neovim sends didOpen for the buffers attached meanwhile; what
      -- waited for the server is asked after that
      vim.schedule(function()
        for _, fn in ipairs(M.on_initialized) do
          pcall(fn)
        end
      end)
    end,
    on_exit = function(code, signal, id)
      vim.schedule(function()
        on_exit(code, signal, id)
      end)
    end,
  }
end

local function attachable(buf)
  if not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= "" then
    return false
  end
  return vim.tbl_contains(M.cfg.filetypes, vim.bo[buf].filetype)
end

--- Start the server (when needed) and attach `buf`.
function M.attach(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  if not M.cfg or not attachable(buf) then
    return nil
  end
  M.buffers[buf] = true
  if M.restart_timer then          -- waiting out a backoff: the restart attaches it
    return nil
  end
  local client = M.client()
  if client then
    if not vim.lsp.buf_is_attached(buf, client.id) then
      vim.lsp.buf_attach_client(buf, client.id)
    end
    return client.id
  end
  local cmd = config.server_cmd(M.cfg)
  if vim.fn.executable(cmd[1]) ~= 1 then
    M.fail("not found: " .. util.short_name(cmd[1]), string.format("cannot start the "
      .. "server: %q is not an executable (set cmd or python in require('inkling').setup)", cmd[1]))
    return nil
  end
  install_notify_filter()
  local conf = lsp_config(buf)
  M.root = conf.root_dir
  M.ready_at = nil
  M.set_status({ state = "starting", message = "starting the server" })
  local id
  if has_start then
    id = vim.lsp.start(conf, { bufnr = buf })
  else
    id = vim.lsp.start_client(conf)
    if id then
      vim.lsp.buf_attach_client(buf, id)
    end
  end
  if not id then
    M.fail("server did not start", "the server could not be started: " .. table.concat(cmd, " "))
    return nil
  end
  M.client_id = id
  M.our_ids[id] = true
  return id
end

--- Attach every loaded buffer of a configured file type (and those we attached before).
function M.start_all()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if attachable(buf) then
      M.attach(buf)
    end
  end
end

function M.stop()
  if M.restart_timer then
    M.restart_timer:stop()
    pcall(function() M.restart_timer:close() end)
    M.restart_timer = nil
  end
  local client = M.client()
  if client then
    M.stopping[client.id] = true
    M.call(client, "stop")
  end
  M.client_id = nil
end

--- Stop, forget the failure count, start again now.
function M.restart()
  M.stop()
  M.failures, M.notified = 0, false
  -- vim.lsp.start would reuse a client that is still shutting down: start after it went
  vim.defer_fn(M.start_all, 200)
end

--- Send new settings (the options tree) with workspace/didChangeConfiguration.
function M.configure(settings)
  M.cfg.init_options = util.merge(M.cfg.init_options or {}, settings)
  local client = M.client()
  if client then
    M.call(client, "notify", "workspace/didChangeConfiguration", { settings = settings })
  end
end

--- A server was started and is not initialized yet (requests would be dropped).
function M.starting()
  if not M.client_id then
    return false
  end
  local client = vim.lsp.get_client_by_id(M.client_id)
  if client then
    return not client.initialized
  end
  -- before initialize is answered, 0.7 lists the client only among the uninitialized ones
  return M.our_ids[M.client_id] == true
end

function M.request(method, params, handler, buf)
  local client = M.client()
  if not client or not client.initialized then
    return false
  end
  return M.call(client, "request", method, params, handler, buf)
end

function M.statusline()
  return util.format_status(M.status)
end

--- The status in full (the error's whole message): for :InklingStatus.
function M.describe()
  local s = M.status
  local text = util.format_status(s, { max_message = 1000 })
  if type(s) == "table" and s.detail and s.detail ~= s.message then
    text = text .. ": " .. s.detail
  end
  return text
end

function M.setup(cfg)
  M.cfg = cfg
end

return M
