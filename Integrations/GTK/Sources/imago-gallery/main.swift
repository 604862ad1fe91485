import Foundation
import ImagoGTK
import Imago

gtk_init()
let window = gtk_window_new()!
gtk_window_set_default_size(window.cast(GtkWindow.self), 300, 300)
let view = ImageView(width: 300, height: 300)
gtk_window_set_child(window.cast(GtkWindow.self), view.widget)
gtk_window_present(window.cast(GtkWindow.self))
let start = monotonicSeconds()
view.setImage(with: URL(fileURLWithPath: CommandLine.arguments[1])) { result in
    print("done", (try? result.get())?.image.width ?? -1, Thread.isMainThread, monotonicSeconds() - start)
}
Task { @MainActor in print("main actor task ran", Thread.isMainThread) }
while monotonicSeconds() - start < 2 { if g_main_context_iteration(nil, 0) == 0 { usleep(2000) } }
print(WidgetCapture.savePNG(of: window, to: "/tmp/smoke.png"))
