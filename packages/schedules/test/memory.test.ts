import { MemoryScheduleStore } from "../src/stores/memory.js";
import { runScheduleStoreContract } from "./contract.js";

runScheduleStoreContract({
  name: "memory",
  create: async (clock) => new MemoryScheduleStore({ clock }),
  cleanup: async (store) => store.close(),
  noPeerReason: "the memory store lives in one process and has no second connection",
});
