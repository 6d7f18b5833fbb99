"""Reading what authors write: front matter, fences, sliders and the scenario, citations, glossary terms, links. Nothing here imports altair or runs a model."""
