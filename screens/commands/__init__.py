"""One module per `fabwiz` subcommand (registered lazily in `screens.cli`)."""
