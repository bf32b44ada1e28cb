"""Beyond one machine (issue 25, X2): `ania serve --role gateway` holds the OneBot link and admits messages,
`--role worker` runs the turns, all on one Postgres (docs/DEPLOY.md)."""
