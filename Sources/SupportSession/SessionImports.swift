// The session machines speak in SupportWire's types; re-export them so node code needs one import.
@_exported import SupportWire
