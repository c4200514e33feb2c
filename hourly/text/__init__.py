"""Text hourly reads and writes: plural words (:mod:`.plurals`), secrets and paths kept out of what
it prints and stores (:mod:`.privacy`), the times a user types (:mod:`.timeparse`)."""
