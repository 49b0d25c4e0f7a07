// yolo11-sweep: the executable of yolo11::cli::sweep (src/cli/sweep.cpp). Not a `yolo11 MODE` (yet), so it is declared
// here rather than in include/yolo11/cli/cli.h.
namespace yolo11::cli {
int sweep(int argc, char** argv);  ///< yolo11-sweep [--cfg FILE] batch=8,16 workers=0,2 ... | --verify RUN_DIR
}

int main(int argc, char** argv) { return yolo11::cli::sweep(argc, argv); }
