"""The model seam: the Model protocol, the OpenAI-compatible implementation, token counting."""
