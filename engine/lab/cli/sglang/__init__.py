"""SGLang's step as text in the terminal."""
