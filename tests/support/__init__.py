"""What the tests share: helpers, references, kits and fakes."""
