"""fabwiz presentation: the Textual app, the rich console output of headless commands, the CLI."""
