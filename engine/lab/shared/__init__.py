"""What several of the lab's jobs use: narration placeholders, the tokenizer, the costs
of hashing and prefill."""
