"""cupynet.utils: helpers with torch.utils names (``checkpoint``)."""
