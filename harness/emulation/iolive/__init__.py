"""Live I/O (``--model io-aware``): staging through burst_buffer/lua, the contention service,
drains, job phases and storage tiers."""
