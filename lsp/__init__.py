"""The pygls server, the `inkling` command line, headless replay and trace tools."""
