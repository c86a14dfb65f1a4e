"""The command line (`memgpt-lite`) and the interactive chat."""
