"""Test infrastructure: private broker and database nodes that the test suite and the benchmarks start
(``rabbit_node``: RabbitMQ nodes restarted, frozen or served over TLS; ``pg_node``: a PostgreSQL
cluster restarted, stopped and started). Imported by tests and benches only, never by a production
package (``tests/architecture/test_layering.py``), so it ships in the wheel but runs nothing there."""
