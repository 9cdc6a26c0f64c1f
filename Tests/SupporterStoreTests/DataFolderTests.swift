import Foundation
import Glibc
import Testing

import TestSupport
@testable import SupporterStore

/// The data folder is for its owner only.
@Suite struct DataFolderTests {
    static func mode(_ path: String) -> mode_t {
        var status = stat()
        stat(path, &status)
        return status.st_mode & 0o7777
    }

    @Test func aMissingFolderIsCreatedForItsOwnerOnly() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("a/b/data")
        let previous = umask(0o022)
        defer { umask(previous) }
        let preparation = try DataFolder.prepare(path: path)
        #expect(preparation.created && preparation.tightenedFrom == nil && preparation.note == nil)
        #expect(Self.mode(path) == 0o700)
        // Preparing it again changes nothing.
        #expect(try DataFolder.prepare(path: path) == DataFolder.Preparation(path: path, created: false, tightenedFrom: nil))
    }

    @Test(arguments: [0o777, 0o755, 0o750, 0o701, 0o2770] as [mode_t])
    func aFolderOpenToOthersIsTightenedWithANote(mode: mode_t) throws {
        let folder = try TemporaryFolder()
        let path = folder.file("data")
        #expect(mkdir(path, 0o700) == 0 && chmod(path, mode) == 0)
        let preparation = try DataFolder.prepare(path: path)
        #expect(!preparation.created)
        #expect(preparation.tightenedFrom == UInt16(mode))
        #expect(Self.mode(path) == 0o700)
        let note = try #require(preparation.note)
        #expect(note.contains(path) && note.contains(DataFolder.octal(UInt16(mode))) && note.contains("0700"))
    }

    @Test(arguments: [0o700, 0o500] as [mode_t])
    func aPrivateFolderIsLeftAlone(mode: mode_t) throws {
        let folder = try TemporaryFolder()
        let path = folder.file("data")
        #expect(mkdir(path, mode) == 0 && chmod(path, mode) == 0)
        #expect(try DataFolder.prepare(path: path).note == nil)
        #expect(Self.mode(path) == mode)
    }

    @Test(.enabled(if: geteuid() == 0, "only root can give a folder to another user"))
    func anOpenFolderOfAnotherUserIsRefused() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("data")
        #expect(mkdir(path, 0o777) == 0 && chmod(path, 0o777) == 0 && chown(path, 4242, 4242) == 0)
        let error = #expect(throws: StoreError.self) { try DataFolder.prepare(path: path) }
        #expect(error?.kind == .integrity)
        #expect(error?.message.contains("0777") == true)
        #expect(error?.message.contains("chmod 700") == true)
        #expect(error?.path == path)
        #expect(Self.mode(path) == 0o777)  // left as it was
    }

    @Test func aFileIsNotAFolder() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("file")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let error = #expect(throws: StoreError.self) { try DataFolder.prepare(path: path) }
        #expect(error?.kind == .io)
        #expect(error?.message.contains("not a folder") == true)
    }

    @Test func aDataFolderServesOneNodeAtATime() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("data")
        try DataFolder.prepare(path: path)
        let first = try DataFolderLock(folder: path)
        do {
            _ = try DataFolderLock(folder: path)
            Issue.record("a second lock was granted")
        } catch {
            #expect(error.kind == .busy)
            #expect(error.message.contains("another supporter node is serving with this data folder (process \(getpid()))"))
        }
        first.release()
        let second = try DataFolderLock(folder: path)
        second.release()
        #expect(Self.mode(path + "/serve.lock") == 0o600)
    }
}
