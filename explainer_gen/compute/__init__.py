"""Running the models: pages and their inline numbers, the vocabulary prose may call, figure kinds and their artefacts, and the cache that keeps them."""
