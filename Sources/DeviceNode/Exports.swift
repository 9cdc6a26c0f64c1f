// An app imports DeviceNode alone: the session types and wire types come with it.
@_exported import SupportSession
