"""What the browser gets: the JSON contract the loader reads and the Vega bundle (the loader, CSS and fonts are in ../assets)."""
