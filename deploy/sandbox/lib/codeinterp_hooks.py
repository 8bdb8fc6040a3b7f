"""Hooks the kernel driver installs for code it runs; kept free of imports so the
driver can set them without loading matplotlib."""

# show() of the codeinterp matplotlib backend calls this, when set, to capture figures.
show = None
