"""The lab around the models, in folders by job: ``play`` (a scenario played into a
timeline), ``workload`` (the workload lab's runs), ``traces`` (request traces replayed),
``cli`` (``python -m engine``), and ``shared`` (what several of them use)."""
