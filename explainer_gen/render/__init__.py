"""Writing HTML: figure and control blocks, cards, the feed, MathML, the explainer fence."""
