// rsup-sample: the sample app's model driven from a terminal, as a phone app's views would drive it.
//
//   rsup-sample HOST PORT CA.pem TOKEN CODE [--auto-allow]
//
// Prints each screen the app would show; at a prompt, type y (allow) or n (deny); Ctrl-D leaves.
import DeviceNode
import Foundation
import SampleAppModel
import SupportWire
import SupportVocabulary

@MainActor
func runSample() async -> Int32 {
    let arguments = Array(CommandLine.arguments.dropFirst())
    let autoAllow = arguments.contains("--auto-allow")
    let positional = arguments.filter { !$0.hasPrefix("--") }
    guard positional.count == 5, let port = UInt16(positional[1]) else {
        FileHandle.standardError.write(Data("usage: rsup-sample HOST PORT CA.pem TOKEN CODE [--auto-allow]\n".utf8))
        return 2
    }
    var configuration = DeviceConfiguration(
        host: positional[0], port: port, tls: .makeClientConfiguration(trustRoots: .file(positional[2])),
        apiToken: positional[3], deviceName: "Sample app")
    configuration.capabilities = [Feature(.screenShare), Feature(.voip)]
    let app: SupportAppModel
    do { app = try SupportAppModel(configuration: configuration) } catch {
        print("cannot start: \(error)")
        return 1
    }
    // The "view": redraw on every change, answer the prompt.
    app.onScreen = { screen in
        print(screen)
        if case .prompt = screen { if autoAllow { app.allow() } else { print("allow? [y/n]") } }
    }
    await app.join(code: positional[4])
    if let error = app.joinError {
        print(error)
        return 1
    }
    // Terminal input, off the main actor; answers hop to it.
    Thread {
        while let line = readLine() {
            let word = line.lowercased()
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    if word.hasPrefix("y") { app.allow() } else if word.hasPrefix("n") { app.deny() }
                }
            }
        }
        DispatchQueue.main.async { MainActor.assumeIsolated { app.leave() } }
    }.start()
    while !app.support.state.isEnded { try? await Task.sleep(for: .milliseconds(50)) }
    return 0
}

exit(await runSample())
