// A supporter tool imports SupporterNode alone: the session types and wire types come with it.
@_exported import SupportSession
@_exported import SupportRegistry
