"""The explorer: a Textual UI over capture bundles. Reads bundles only; never imports torch or triton."""
