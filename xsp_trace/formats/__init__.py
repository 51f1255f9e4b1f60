"""Facts about external trace formats (event codes, field names per version), one module per format."""
