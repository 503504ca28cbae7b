/** The drag-and-drop data type of a palette entry; its data is the operator type. */
export const OPERATOR_DRAG_TYPE = "application/x-keyflow-operator";
