"""The local pipeline behind ``xcompat run``: every stage of the CI, on this machine, in one command."""
