"""Browser components: each a Panel JSComponent whose ES module (and stylesheet) is a
file beside it. They move the step in the browser, without a round trip to Python."""
