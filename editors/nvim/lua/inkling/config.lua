-- Defaults and validation of require("inkling").setup{...}.
local util = require("inkling.util")

local M = {}

M.defaults = {
  -- The server command. `python` (when set) wins: {python, "-m", "inkling.lsp.cli", "serve"}.
  cmd = { "inkling", "serve" },
  python = nil,
  -- File types to attach to (LSP language ids are the file types).
  filetypes = { "python", "javascript", "typescript", "typescriptreact", "javascriptreact",
                "go", "rust", "java", "c", "cpp", "ruby", "sh", "lua" },
  -- Workspace root: the first directory upwards holding one of these, else the cwd.
  root_markers = { ".git", "pyproject.toml", "setup.py", "package.json", "go.mod", "Cargo.toml" },
  -- The server's options tree, sent as initializationOptions (merged into this default);
  -- configure() sends changes with workspace/didChangeConfiguration. Example:
  --   { completion = { drafts = 3, automaticDrafts = 1 }, model = { path = "" } }
  -- Automatic requests ask for one draft (any decoder is then greedy); the next-draft key
  -- asks for `drafts`, which the "branches" decoder makes different from each other.
  init_options = { completion = { decoder = "branches" } },
  -- Ghost text: wait this long after the last keystroke before asking (the server
  -- debounces automatic requests again, adaptively).
  debounce_ms = 60,
  -- Insert-mode keys; false disables one. Accept, dismiss and next fall back to the key's
  -- ordinary meaning when there is no ghost text.
  keys = {
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
  -- Highlight group of ghost text (linked to Comment unless you define it).
  hl_group = "InklingGhost",
  enabled = true,
}

function M.resolve(user)
  local cfg = util.merge(M.defaults, user or {})
  if user and user.keys then
    cfg.keys = util.merge(M.defaults.keys, user.keys)
  end
  for name, kind in pairs({ cmd = "table", filetypes = "table", init_options = "table",
                            debounce_ms = "number", keys = "table", restart = "table" }) do
    if type(cfg[name]) ~= kind then
      error(string.format("inkling.setup: %s must be a %s, got %s", name, kind, type(cfg[name])), 3)
    end
  end
  return cfg
end

function M.server_cmd(cfg)
  if cfg.python and cfg.python ~= "" then
    return { cfg.python, "-m", "inkling.lsp.cli", "serve" }
  end
  return cfg.cmd
end

return M
