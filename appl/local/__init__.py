"""The embedded local model: a llama.cpp server the project starts, its catalog and weights."""
