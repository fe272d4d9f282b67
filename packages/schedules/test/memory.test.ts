import { MemoryScheduleStore } from "../src/stores/memory";
import { runScheduleStoreContract } from "./contract";

runScheduleStoreContract({
  name: "memory",
  create: async (clock) => new MemoryScheduleStore({ clock }),
  cleanup: async (store) => store.close(),
  noPeerReason: "the memory store lives in one process and has no second connection",
});
