"""Several vehicles in one world: simulator management and a referee."""
