"""Real servers (Postgres, Chroma) started from their installed packages in a temporary directory on
loopback, for the tests, the benches and the soak. Nothing here runs in a deployed bot."""
