"""The web app that `memgpt-lite serve` serves at `/`: plain ES modules, HTML
and CSS under static/, shipped in the package (no build step, nothing
fetched from elsewhere). It calls the server's own HTTP routes, as any
client does. docs/serving/web-app.md says what it shows."""
