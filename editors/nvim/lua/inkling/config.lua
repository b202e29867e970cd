-- Defaults and validation of require("inkling").setup{...}.
local util = require("inkling.util")

local M = {}

M.defaults = {
  -- The server command. `python` (when set) wins: {python, "-m", "inkling.cli.main", "serve"}.
  cmd = { "inkling", "serve" },
  python = nil,
  -- File types to attach to (LSP language ids are the file types): what the bundled model
  -- knows; add others for a model that knows them.
  filetypes = { "python" },
  -- Workspace root: the first directory upwards holding one of these, else the cwd.
  root_markers = { ".git", "pyproject.toml", "setup.py", "package.json", "go.mod", "Cargo.toml" },
  -- The server's options tree, sent as initializationOptions: only what you set here (the
  -- server's own defaults hold for the rest, as with `inkling serve` and no options);
  -- configure() sends changes with workspace/didChangeConfiguration. Every option is in
  -- :help inkling-options. Example: { completion = { drafts = 5 }, model = { device = "cpu" } }
  -- Automatic requests ask for one draft; the next-draft and trigger keys ask for `drafts`,
  -- different from each other by the server's default decoder, "beam" ("greedy" gives one).
  init_options = {},
  -- Ask as you type (true), or only on the trigger and next-draft keys (false);
  -- :InklingToggleAutoTrigger flips it (copilot.lua's suggestion.auto_trigger).
  auto_trigger = true,
  -- Ghost text: wait this long after the last keystroke before asking (the server
  -- debounces automatic requests again, adaptively).
  debounce_ms = 60,
  -- Insert-mode keys; false disables one. Accept, accept-word, accept-line and dismiss fall
  -- back to the key's ordinary meaning when there is no ghost text.
  keys = {
    trigger = "<M-\\>",   -- ask for a suggestion now (copilot.vim's <M-\>)
    accept = "<Tab>",
    accept_word = "<M-Right>",
    accept_line = "<M-Down>",
    next = "<M-]>",
    prev = "<M-[>",
    dismiss = "<C-]>",
  },
  -- Restart a crashed or missing server after initial_ms, doubling up to max_ms.
  restart = { initial_ms = 1000, factor = 2, max_ms = 30000 },
  -- "auto": Neovim's own vim.lsp.inline_completion on 0.12 and later, the plugin's ghost
  -- text before; false: always the plugin's ghost text.
  builtin = "auto",
  -- Highlight group of ghost text: grey and italic unless you define it (not Comment, whose
  -- look it would share with the comments around it).
  hl_group = "InklingGhost",
  enabled = true,
}

function M.resolve(user)
  local cfg = util.merge(M.defaults, user or {})
  if user and user.keys then
    cfg.keys = util.merge(M.defaults.keys, user.keys)
  end
  for name, kind in pairs({ cmd = "table", filetypes = "table", init_options = "table",
                            debounce_ms = "number", keys = "table", restart = "table",
                            auto_trigger = "boolean" }) do
    if type(cfg[name]) ~= kind then
      error(string.format("inkling.setup: %s must be a %s, got %s", name, kind, type(cfg[name])), 3)
    end
  end
  return cfg
end

function M.server_cmd(cfg)
  if cfg.python and cfg.python ~= "" then
    return { cfg.python, "-m", "inkling.cli.main", "serve" }
  end
  return cfg.cmd
end

return M
