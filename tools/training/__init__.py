"""The store models' pipeline: corpus, tokenizer and model training, export, quality."""
