"""The page around the views: layout, theme, stylesheets, the page's <head>, and the static
site's page before Python."""
