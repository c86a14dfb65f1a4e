"""The store's SQL for messages (recall memory): a part of `PostgresStore`. (being written)"""


class MessageStore:
    pass
