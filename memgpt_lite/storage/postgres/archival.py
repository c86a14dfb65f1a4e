"""The store's SQL for passages and vectors: a part of `PostgresStore`. (being written)"""


class ArchivalStore:
    pass
